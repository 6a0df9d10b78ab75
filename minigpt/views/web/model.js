// model.js: minigpt's GPT in plain JavaScript, the forward pass only. Read it beside model.py.
//
//     x = rmsnorm(wte[token] + wpe[position])
//     for each layer:
//         x = x + attn_wo(attention(attn_wq, attn_wk, attn_wv of rmsnorm(x)))
//         x = x + mlp_fc2(relu(mlp_fc1(rmsnorm(x))))          (gelu when activation = "gelu")
//     logits = lm_head(x)                                     (after one more rmsnorm if final_norm)
//
// It reads a name two ways, as minigpt does in Python:
//   forward(tokens)   every position at once, layer by layer, as model.py reads a batch:
//                     position t attends to positions 0..t (the causal mask);
//   step(cache, tok)  one new token, as microgpt and sampling.py decode: its query reads the
//                     keys and values cached for the positions before it, and the future is
//                     not in the cache yet, so no mask is needed. Sampling uses this.
// The two agree to float64 rounding (the tests check it).
//
// Weights are the checkpoint's state dict under microgpt's names (wte, wpe, lm_head,
// layer0.attn_wq, ...), each matrix [out, in] stored row by row. Arithmetic is in float64.
"use strict";

const MiniGPTModel = (() => {
  // ---- the model, in model.py's order ----------------------------------------------------------

  // Causal attention for one position, head by head: its query against the keys of itself and
  // the positions before it (the mask is in what the caller passes: never a later position)
  //     scores = q . k / sqrt(head_dim)      one per position read
  //     weights = softmax(scores)            they sum to 1
  //     out = sum of weights[t] * v[t]       the heads' outputs side by side, [n_embd]
  function attend(q, keys, values, nHead) {
    const headDim = q.length / nHead;
    const out = new Float64Array(q.length);
    const scores = [], weights = [];
    for (let h = 0; h < nHead; h++) {
      const start = h * headDim;
      const s = keys.map((k) => dot(q, k, start, headDim) / Math.sqrt(headDim));
      const w = softmax(s);
      for (let t = 0; t < keys.length; t++) {
        for (let i = start; i < start + headDim; i++) out[i] += w[t] * values[t][i];
      }
      scores.push(s);
      weights.push(w);
    }
    return { out, scores, weights };
  }

  // x / sqrt(mean(x^2) + eps), times a learned gain when the recipe has one (norm_scale)
  function rmsnorm(x, eps, gain) {
    let meanSquare = 0;
    for (let i = 0; i < x.length; i++) meanSquare += x[i] * x[i];
    const scale = 1 / Math.sqrt(meanSquare / x.length + eps);
    const y = new Float64Array(x.length);
    for (let i = 0; i < x.length; i++) y[i] = x[i] * scale * (gain ? gain.data[i] : 1);
    return y;
  }

  function relu(x) {
    for (let i = 0; i < x.length; i++) if (x[i] < 0) x[i] = 0; // in place, as model.py does it
    return x;
  }

  // torch's default GELU: x * Phi(x), with Phi the normal distribution's CDF, through erf
  function gelu(x) {
    for (let i = 0; i < x.length; i++) x[i] = 0.5 * x[i] * (1 + erf(x[i] / Math.SQRT2));
    return x;
  }

  // erf from Abramowitz and Stegun's formula 7.1.26 (absolute error under 1.5e-7)
  function erf(x) {
    const t = 1 / (1 + 0.3275911 * Math.abs(x));
    const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    const y = 1 - poly * Math.exp(-x * x);
    return x >= 0 ? y : -y;
  }

  // Every position of a token sequence at once, layer by layer, as model.py computes it;
  // for each position, what `step` returns for it, and what each layer read (its residual
  // stream and that normed, `a`, from which q, k and v are made).
  //
  // The model itself, and two speed-ups that change no number:
  //
  // `known` (what this returned for tokens that begin as these do, with the same weights and
  // edits) spares the positions they share. Position t depends on positions 0..t alone, so only
  // the later positions are computed, their queries reading the known positions' keys and values
  // as `step` reads its cache: typing a character at the end computes one position.
  //
  // `from` ({layer, residual}) starts at that layer from residual streams a forward pass already
  // made (what that layer read, per position): the layers before it, which the edits did not
  // change, are not run again. The page's live ablation costs use it.
  //
  // What the measurements change comes from outside, as the Python measurements hand model.py an
  // `attend` or a hook: `reads(t, T)` is how many positions position t reads (t + 1: the causal
  // mask; `unmasked` below reads all T), and `edit(where, layer, outputs, first)` may change, in
  // place, what a sublayer wrote at positions first, first + 1, ...: "heads" (each head's output,
  // side by side, before attn_wo), "attention" (after attn_wo) and "mlp" (after mlp_fc2). A pass
  // whose positions read later ones knows no position before the whole text: `known` is not used.
  function forward(model, tokens, { known = [], from = null, reads = null, edit = null } = {}) {
    const { config: c, weights: w } = model;
    if (tokens.length > c.block_size) throw new Error(`the model reads at most ${c.block_size} positions`);
    const seesLater = Boolean(reads) && reads(0, tokens.length) > 1;
    if (seesLater) known = [];
    const p = Math.min(known.length, tokens.length); // the positions already computed
    if (p === tokens.length) return known.slice(0, p);
    const fresh = tokens.slice(p);
    const changed = (where, l, outputs) => { if (edit) edit(where, l, outputs, p); return outputs; };
    const embedded = from ? [] : fresh.map((token, n) => add(embedding(w.wte, token), embedding(w.wpe, p + n)));
    let x = from ? from.residual.slice(p) : embedded.map((e) => rmsnorm(e, c.norm_eps, null));
    const layers = [];
    for (const [l, layer] of model.layers.entries()) {
      if (from && l < from.layer) continue;
      const residual = x; // what this layer reads: kept for the page, which draws where q, k and v come from
      const a = x.map((xt) => rmsnorm(xt, c.norm_eps, layer.attn_norm));
      const q = linearAll(layer.attn_wq, a);
      const before = known.slice(0, p).map((s) => s.layers[l]); // this layer, at the known positions (a whole pass's)
      const k = [...before.map((s) => s.k), ...linearAll(layer.attn_wk, a)];
      const v = [...before.map((s) => s.v), ...linearAll(layer.attn_wv, a)];
      // position t reads positions 0..t: the causal mask, as a slice
      const seen = (n) => (reads ? reads(p + n, k.length) : p + n + 1);
      const heads = q.map((qt, n) => attend(qt, k.slice(0, seen(n)), v.slice(0, seen(n)), c.n_head));
      changed("heads", l, heads.map((h) => h.out));
      const attnOut = changed("attention", l, linearAll(layer.attn_wo, heads.map((h) => h.out)));
      x = x.map((xt, t) => add(xt, attnOut[t]));
      const afterAttention = x;
      const m = x.map((xt) => rmsnorm(xt, c.norm_eps, layer.mlp_norm));
      const fc1 = linearAll(layer.mlp_fc1, m); // kept for the page's walk: the nonlinearity works in place on a copy
      const hidden = fc1.map((h) => (c.activation === "gelu" ? gelu(h.slice()) : relu(h.slice())));
      const mlpOut = changed("mlp", l, linearAll(layer.mlp_fc2, hidden));
      x = x.map((xt, t) => add(xt, mlpOut[t]));
      layers.push({ residual, a, q, k, v, heads, attnOut, afterAttention, m, fc1, hidden, mlpOut, afterMLP: x });
    }
    const last = x; // the residual stream after the last layer
    if (c.final_norm) x = x.map((xt) => rmsnorm(xt, c.norm_eps, w.final_norm));
    const logits = linearAll(w.lm_head, x);
    return [...known.slice(0, p), ...fresh.map((_, n) => ({
      logits: logits[n],
      embedded: embedded[n], // wte[token] + wpe[t], before the first norm
      last: last[n], final: x[n], // the last residual stream, and what lm_head reads (after the final norm, if any)
      layers: layers.map(({ residual, a, q, k, v, heads, attnOut, afterAttention, m, fc1, hidden, mlpOut, afterMLP }) => ({
        residual: residual[n], a: a[n], q: q[n], k: k[p + n], v: v[p + n],
        attnOut: attnOut[n], m: m[n], fc1: fc1[n], hidden: hidden[n], mlpOut: mlpOut[n], // each sublayer's steps
        afterAttention: afterAttention[n], afterMLP: afterMLP[n], // the residual stream after each sublayer
        scores: heads[n].scores, weights: heads[n].weights, out: heads[n].out,
      })),
    }))];
  }

  // What forward needs to switch parts off, as minigpt/measurements/ablation.py's forward_without
  // does: heads ([[layer, head], ...]: their output, before attn_wo), whole attention layers and MLP
  // layers ([layer, ...]: their output, after the projection). Off means 0, or with `off.means` (the
  // page carries ablation.py's mean_outputs) the part's mean output. `off.unmasked` takes the causal
  // mask away: every position reads every other, the later ones too, as the model was never trained
  // to (what the mask is for, seen by switching it off). null or nothing off: {}.
  function switchedOff(model, off) {
    if (!off) return {};
    const d = model.config.n_embd / model.config.n_head, means = off.means;
    const edit = (where, l, outputs) => {
      if (where === "heads") {
        for (const [layer, h] of off.heads) {
          if (layer !== l) continue;
          for (const out of outputs) means ? out.set(means.head[l][h], h * d) : out.fill(0, h * d, (h + 1) * d);
        }
      } else if (off[where].includes(l)) outputs.forEach((out) => (means ? out.set(means[where][l]) : out.fill(0)));
    };
    return { edit, reads: off.unmasked ? (t, T) => T : null };
  }

  // `value` in place of one part's output at one position ({kind: "head" or "mlp", layer, head,
  // position, value}): a head's output before attn_wo, or an MLP's after mlp_fc2. The page copies a
  // part from one name into another this way (activation patching); `also`, another edit, runs first.
  function patched(model, { kind, layer, head, position, value }, also = null) {
    const d = model.config.n_embd / model.config.n_head;
    return (where, l, outputs, first) => {
      if (also) also(where, l, outputs, first);
      if (l !== layer || position < first || where !== (kind === "head" ? "heads" : "mlp")) return;
      outputs[position - first].set(value, kind === "head" ? head * d : 0);
    };
  }

  // The logits a residual stream gives when read as the model reads its last one: through the
  // final norm (when the recipe has one), then lm_head. The logit lens reads every stage this way.
  function readOff(model, x) {
    const { config: c, weights: w } = model;
    return linear(w.lm_head, c.final_norm ? rmsnorm(x, c.norm_eps, w.final_norm) : x);
  }

  // ---- where a logit comes from: direct logit attribution (measurements/attribution.py) --------

  // What each part wrote into the residual stream at one position of `forward`'s result, in
  // attribution.py's order: the embeddings (normed), then per layer each head's output through its
  // own slice of attn_wo, and the MLP's output. A layer whose whole attention is switched off wrote
  // what took its place (0, or its mean), which no head owns: it follows that layer's heads.
  function partWrites(model, s, off = null) {
    const c = model.config, d = c.n_embd / c.n_head;
    const parts = [{ name: "embeddings", vector: s.layers[0].residual }];
    s.layers.forEach((layer, l) => {
      const W = model.layers[l].attn_wo, attentionOff = Boolean(off && off.attention.includes(l));
      for (let h = 0; h < c.n_head; h++) {
        const v = new Float64Array(c.n_embd);
        for (let i = 0; i < c.n_embd && !attentionOff; i++) {
          for (let j = h * d, row = i * W.cols; j < (h + 1) * d; j++) v[i] += W.data[row + j] * layer.out[j];
        }
        parts.push({ name: `layer ${l} head ${h}`, vector: v });
      }
      if (attentionOff) parts.push({ name: `layer ${l} attention (off)`, vector: layer.attnOut });
      parts.push({ name: `layer ${l} MLP`, vector: layer.mlpOut });
    });
    return parts;
  }

  // Each part's term in every logit at one position: the final norm's scale there (1/rms of the
  // stream lm_head reads; 1 without a final norm) times lm_head's row for the token, times the
  // norm's gains when it has them, dotted with what the part wrote. A logit's terms add up to it.
  function attribution(model, s, off = null) {
    const { config: c, weights: w } = model;
    let scale = 1;
    if (c.final_norm) {
      let meanSquare = 0;
      for (let i = 0; i < s.last.length; i++) meanSquare += s.last[i] * s.last[i];
      scale = 1 / Math.sqrt(meanSquare / s.last.length + c.norm_eps);
    }
    const parts = partWrites(model, s, off).map(({ name, vector }) => ({ name, vector, terms: readThrough(model, vector, scale) }));
    return { parts, scale };
  }

  // A vector written into the residual stream read through lm_head, as attribution reads a part: the
  // final norm's gains when it has them, times `scale` (the norm's 1/rms at a position, or 1), then
  // lm_head's rows. What the vector adds to each token's logit.
  function readThrough(model, vector, scale = 1) {
    const { config: c, weights: w } = model;
    const gain = c.final_norm && w.final_norm ? w.final_norm.data : null;
    return linear(w.lm_head, vector.map((x, i) => x * scale * (gain ? gain[i] : 1)));
  }

  // Column `unit` of layer l's mlp_fc2: what one unit of that MLP writes into the stream per unit of its activation
  function unitColumn(model, l, unit) {
    const W = model.layers[l].mlp_fc2;
    return Float64Array.from({ length: W.rows }, (_, i) => W.data[i * W.cols + unit]);
  }

  // ---- one token at a time over a key/value cache (attention.py's LayerKV), as sampling decodes ----

  function newCache(config) {
    const layers = () => Array.from({ length: config.n_layer }, () => []);
    return { length: 0, keys: layers(), values: layers() };
  }

  // One token through the model at the next position: its logits, and per layer what a
  // learner may want to look at (this position's q, k, v; each head's scores and weights).
  function step(model, cache, token) {
    const { config: c, weights: w } = model;
    const position = cache.length;
    if (position >= c.block_size) throw new Error(`the model reads at most ${c.block_size} positions`);
    let x = rmsnorm(add(embedding(w.wte, token), embedding(w.wpe, position)), c.norm_eps, null);
    const layers = [];
    model.layers.forEach((layer, l) => { // layer.attn_wq is the state dict's `layer${l}.attn_wq`
      const a = rmsnorm(x, c.norm_eps, layer.attn_norm);
      const q = linear(layer.attn_wq, a), k = linear(layer.attn_wk, a), v = linear(layer.attn_wv, a);
      cache.keys[l].push(k);
      cache.values[l].push(v);
      const heads = attend(q, cache.keys[l], cache.values[l], c.n_head);
      x = add(x, linear(layer.attn_wo, heads.out));
      const m = rmsnorm(x, c.norm_eps, layer.mlp_norm);
      const hidden = linear(layer.mlp_fc1, m);
      x = add(x, linear(layer.mlp_fc2, c.activation === "gelu" ? gelu(hidden) : relu(hidden)));
      layers.push({ q, k, v, scores: heads.scores, weights: heads.weights, out: heads.out });
    });
    if (c.final_norm) x = rmsnorm(x, c.norm_eps, w.final_norm);
    cache.length += 1;
    return { logits: linear(w.lm_head, x), layers };
  }

  // ---- sampling, as sampling.py does it --------------------------------------------------------

  // The logits a draw is made from, in sampling.py's order: the boundary token forbidden at the
  // first position (a name has at least one character), then scaled by 1/temperature, then
  // only the top_k likeliest kept (0 keeps all), then only the smallest set of the likeliest
  // whose probabilities reach top_p (a token is dropped when those before it reach top_p).
  function filterLogits(logits, { temperature = 1, topK = 0, topP = 1, first = false, bos = logits.length - 1 } = {}) {
    const scaled = Array.from(logits, (v) => v / temperature);
    if (first) scaled[bos] = -Infinity;
    if (topK > 0 && topK < scaled.length) {
      const kth = [...scaled].sort((a, b) => b - a)[topK - 1];
      scaled.forEach((v, i) => { if (v < kth) scaled[i] = -Infinity; });
    }
    if (topP < 1) {
      const order = scaled.map((_, i) => i).sort((a, b) => scaled[b] - scaled[a]);
      const probs = softmax(order.map((i) => scaled[i]));
      let before = 0;
      order.forEach((i, rank) => {
        if (before >= topP) scaled[i] = -Infinity;
        before += probs[rank];
      });
    }
    return scaled;
  }

  // The first token whose cumulative probability reaches a uniform draw in [0, 1).
  function sampleToken(logits, draw) {
    const probs = softmax(logits);
    let cumulative = 0;
    for (let i = 0; i < probs.length; i++) {
      cumulative += probs[i];
      if (draw < cumulative) return i;
    }
    return probs.length - 1;
  }

  // A small seeded generator (mulberry32): the same seed gives the same draws.
  function seededRandom(seed) {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  // The token ids of one name after `prefix` (ids too): a draw per character until the
  // boundary token comes, or until the model has read all the positions it can.
  function sampleName(model, { temperature = 1, topK = 0, topP = 1, random = Math.random, prefix = [] } = {}) {
    const bos = model.config.vocab_size - 1;
    const cache = newCache(model.config);
    let logits;
    for (const token of [bos, ...prefix]) logits = step(model, cache, token).logits;
    const out = [];
    for (;;) {
      const candidates = filterLogits(logits, { temperature, topK, topP, first: cache.length === 1, bos });
      const next = sampleToken(candidates, random());
      if (next === bos) break;
      out.push(next);
      if (cache.length === model.config.block_size) break;
      logits = step(model, cache, next).logits;
    }
    return out;
  }

  // ---- the weights, as the page carries them ---------------------------------------------------

  // The bytes of a base64 string, as the page carries every buffer. A plain loop: Uint8Array.from with a
  // function per character took a tenth of the page's opening
  function base64Bytes(base64) {
    const text = atob(base64), bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    return bytes;
  }

  // A little-endian float32 buffer, base64 encoded, as the page carries numbers
  function float32s(base64) {
    return new Float32Array(base64Bytes(base64).buffer);
  }

  // A little-endian float16 buffer, base64 encoded (the snapshots' row scales), as float32s
  function float16s(base64) {
    const halves = new Uint16Array(base64Bytes(base64).buffer);
    return Float32Array.from(halves, (h) => {
      const sign = h & 0x8000 ? -1 : 1, exponent = (h >> 10) & 0x1f, fraction = h & 0x3ff;
      if (exponent === 0) return sign * fraction * 2 ** -24; // subnormal
      if (exponent === 31) return fraction ? NaN : sign * Infinity;
      return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
    });
  }

  // Every weight in one float32 buffer; `tensors` says where each one lies.
  function loadWeights(base64, tensors) {
    const floats = float32s(base64);
    const weights = {};
    for (const [name, { shape, offset }] of Object.entries(tensors)) {
      const size = shape.reduce((a, b) => a * b, 1);
      // as float64, the type every sum is kept in (reading float32 inside the loops is slower)
      weights[name] = { data: Float64Array.from(floats.subarray(offset, offset + size)), rows: shape[0], cols: shape[1] || 1 };
    }
    return weights;
  }

  // The model: its shape, its weights by name, and each layer's weights gathered (norm gains
  // are absent when the recipe has none, and rmsnorm then uses 1).
  function load(data) {
    return assemble(data.config.model, loadWeights(data.weights, data.tensors));
  }

  function assemble(config, weights) {
    const names = ["attn_norm", "attn_wq", "attn_wk", "attn_wv", "attn_wo", "mlp_norm", "mlp_fc1", "mlp_fc2"];
    const layers = Array.from({ length: config.n_layer }, (_, l) =>
      Object.fromEntries(names.map((name) => [name, weights[`layer${l}.${name}`]])));
    return { config, weights, layers };
  }

  // The model as it was at training snapshot `index` (explorer_page.py's snapshots_data): each
  // number a base64 character (its 6-bit value + 32), row by row, times its row's float32 scale.
  const SIX_BITS = new Int8Array(128);
  [..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"].forEach((c, i) => { SIX_BITS[c.charCodeAt(0)] = i - 32; });
  function loadSnapshot(config, carried, index) {
    if (!carried.scaleFloats) carried.scaleFloats = float16s(carried.scales);
    const tensors = Object.entries(carried.tensors);
    const perSnapshot = tensors.reduce((n, [, t]) => n + t.rows * t.cols, 0);
    const rowsPerSnapshot = tensors.reduce((n, [, t]) => n + t.rows, 0);
    let at = index * perSnapshot, row = index * rowsPerSnapshot;
    const weights = {};
    for (const [name, t] of tensors) {
      const data = new Float64Array(t.rows * t.cols);
      for (let r = 0; r < t.rows; r++) {
        const scale = carried.scaleFloats[row + r];
        for (let c = 0; c < t.cols; c++, at++) data[r * t.cols + c] = SIX_BITS[carried.values.charCodeAt(at)] * scale;
      }
      weights[name] = { data, rows: t.shape[0], cols: t.shape[1] || 1 };
      row += t.rows;
    }
    return assemble(config, weights);
  }

  // ---- arithmetic kernels: plain loops, some written for speed (docs/explorer.md) --------------

  // y = W x, for W [out, in]: one dot product per output row
  // (Four running sums rather than one: each addition to a sum waits for the one before,
  // and four independent chains keep the processor busy: a CPU speed-up, see docs/explorer.md.)
  function linear(W, x) {
    const { data, rows, cols } = W; // locals, so the inner loop reads no properties
    const y = new Float64Array(rows);
    const end4 = cols - (cols % 4);
    for (let o = 0, row = 0; o < rows; o++, row += cols) {
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0, i = 0;
      for (; i < end4; i += 4) {
        s0 += data[row + i] * x[i];
        s1 += data[row + i + 1] * x[i + 1];
        s2 += data[row + i + 2] * x[i + 2];
        s3 += data[row + i + 3] * x[i + 3];
      }
      for (; i < cols; i++) s0 += data[row + i] * x[i];
      y[o] = s0 + s1 + s2 + s3;
    }
    return y;
  }

  // y_t = W x_t for every position t at once: the same dot products as `linear`, grouped so
  // that each weight read serves four positions and each input read two rows (positions left
  // over, fewer than four, one at a time). A speed-up: in plain JavaScript the reads cost more
  // than the multiply-adds (see docs/explorer.md). Every sum runs over i in order, so a position
  // gets the same bits whichever group it falls in; the outputs are views into one buffer.
  function linearAll(W, xs) {
    const { data: w, rows: out, cols: n } = W;
    const T = xs.length, x = new Float64Array(T * n), y = new Float64Array(T * out);
    for (let t = 0; t < T; t++) x.set(xs[t], t * n); // the positions side by side
    let t = 0;
    for (; t + 4 <= T; t += 4) {
      const x0 = t * n, x1 = x0 + n, x2 = x1 + n, x3 = x2 + n;
      const y0 = t * out, y1 = y0 + out, y2 = y1 + out, y3 = y2 + out;
      for (let o = 0; o < out; o += 2) {
        const o1 = Math.min(o + 1, out - 1), w0 = o * n, w1 = o1 * n; // an odd last row is done twice
        let a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;
        for (let i = 0; i < n; i++) {
          const u = w[w0 + i], v = w[w1 + i];
          const p0 = x[x0 + i], p1 = x[x1 + i], p2 = x[x2 + i], p3 = x[x3 + i];
          a0 += u * p0; a1 += u * p1; a2 += u * p2; a3 += u * p3;
          b0 += v * p0; b1 += v * p1; b2 += v * p2; b3 += v * p3;
        }
        y[y0 + o] = a0; y[y1 + o] = a1; y[y2 + o] = a2; y[y3 + o] = a3;
        y[y0 + o1] = b0; y[y1 + o1] = b1; y[y2 + o1] = b2; y[y3 + o1] = b3;
      }
    }
    for (; t < T; t++) {
      const x0 = t * n, y0 = t * out;
      for (let o = 0; o < out; o += 2) {
        const o1 = Math.min(o + 1, out - 1), w0 = o * n, w1 = o1 * n;
        let a0 = 0, b0 = 0;
        for (let i = 0; i < n; i++) { const p = x[x0 + i]; a0 += w[w0 + i] * p; b0 += w[w1 + i] * p; }
        y[y0 + o] = a0; y[y0 + o1] = b0;
      }
    }
    return Array.from({ length: T }, (_, s) => y.subarray(s * out, (s + 1) * out));
  }

  // row `i` of an embedding table
  function embedding(W, i) {
    return W.data.slice(i * W.cols, (i + 1) * W.cols);
  }

  function add(a, b) {
    const y = new Float64Array(a.length);
    for (let i = 0; i < a.length; i++) y[i] = a[i] + b[i];
    return y;
  }

  function dot(a, b, start, length) {
    let sum = 0;
    for (let i = start; i < start + length; i++) sum += a[i] * b[i];
    return sum;
  }

  // the largest of many numbers, and where it is: a loop, since Math.max(...values) passes each value as an
  // argument and throws (the call stack is exceeded) past about 125,000 of them, a vocabulary the trainer accepts
  function maxOf(values) {
    let max = -Infinity;
    for (const v of values) if (v > max) max = v;
    return max;
  }

  function argmax(values) {
    let best = 0;
    for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
    return best;
  }

  // How far this file's logits for a name are from torch's (views/page_data.py's torch_check): null where every
  // one agrees to `agreesTo` of its size (torch's float32 and this float64 agree to about 1e-6), else the name
  // and the widest gap. A core changed since this file was written (another activation, a new part) disagrees,
  // and every number a page would draw from it is wrong: a page checks as it opens and then draws none.
  function disagreement(model, check, agreesTo = 1e-3) {
    // as torch ran it: a model trained without the causal mask reads the whole name at every position
    const ours = forward(model, check.tokens, { reads: model.config.causal === false ? (t, T) => T : null });
    let worst = 0, agrees = true;
    check.logits.forEach((row, t) => row.forEach((value, i) => {
      const apart = Math.abs(value - ours[t].logits[i]);
      worst = Math.max(worst, apart);
      agrees = agrees && apart <= agreesTo * (1 + Math.abs(value)); // false for NaN too
    }));
    return agrees ? null : { text: check.text, worst };
  }

  // exp(s - max) / sum: the weights of a row, which add up to 1
  function softmax(scores) {
    const max = maxOf(scores);
    const exps = scores.map((s) => Math.exp(s - max));
    const sum = exps.reduce((a, b) => a + b, 0);
    return exps.map((e) => e / sum);
  }

  return { load, loadSnapshot, base64Bytes, float32s, step, forward, disagreement, switchedOff, patched, readOff, attribution, readThrough, unitColumn, newCache, softmax, maxOf, argmax, filterLogits, sampleToken,
           sampleName, seededRandom };
})();

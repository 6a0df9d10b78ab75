"""optimizer.py's optimizers without torch.optim, for a run (runs/setup.py swaps them in): the same numbers,
a second or more sooner.

Building any torch.optim optimizer imports torch's compiler (its methods are wrapped to stay out of
compiled graphs, and the wrapper imports torch._dynamo), which takes a second or more of every training
process. `ParamGroups` holds an optimizer's parameter groups and per-parameter state as torch.optim holds
them: its state_dict is torch.optim's, key for key, so a checkpoint saved with either loads in the other.
`FusedAdamW.step` calls the same fused kernel with the same arguments as torch.optim.AdamW(fused=True), and
`FastMuon` steps by optimizer.py's own `muon_update`, so every number is the lesson's.
"""

from __future__ import annotations

from collections import defaultdict

import torch

from minigpt.config import TrainConfig
from minigpt.model import GPT
from minigpt.optimizer import make_optimizer, muon_update


class ParamGroups:
    """param_groups (each a dict of settings and "params"), state (per parameter), zero_grad,
    state_dict and load_state_dict, as torch.optim.Optimizer has them; a subclass adds step()."""

    def __init__(self, groups: list[dict], defaults: dict):
        self.param_groups = [{**defaults, **group, "params": list(group["params"])} for group in groups]
        self.state: defaultdict = defaultdict(dict)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad.zero_()

    def state_dict(self) -> dict:
        """{"state": {index: its state}, "param_groups": [settings with "params": indices]}, the
        parameters numbered in group order, as torch.optim numbers them."""
        index: dict[int, int] = {}
        groups = [{**{k: v for k, v in group.items() if k != "params"},
                   "params": [index.setdefault(id(p), len(index)) for p in group["params"]]}
                  for group in self.param_groups]
        return {"state": {index[id(p)]: state for p, state in self.state.items()}, "param_groups": groups}

    def load_state_dict(self, saved: dict) -> None:
        """The saved groups' settings and each parameter's state, onto this optimizer's parameters (the
        nth of a saved group is this group's nth); a saved state that does not fit raises ValueError."""
        if len(saved["param_groups"]) != len(self.param_groups):
            raise ValueError("the saved state has another number of parameter groups")
        by_index = {}  # a saved parameter's number -> the parameter, and whether its group is fused
        for group, saved_group in zip(self.param_groups, saved["param_groups"]):
            if len(group["params"]) != len(saved_group["params"]):
                raise ValueError("a saved parameter group holds another number of parameters")
            by_index.update((index, (p, group.get("fused", False)))
                            for index, p in zip(saved_group["params"], group["params"]))
        state: defaultdict = defaultdict(dict)
        for index, values in saved["state"].items():
            p, fused = by_index[index]
            state[p] = {key: as_kept(value, p, fused and key == "step") for key, value in values.items()}
        self.param_groups = [{**saved_group, "params": group["params"]}
                             for group, saved_group in zip(self.param_groups, saved["param_groups"])]
        self.state = state


def as_kept(value, p: torch.Tensor, fused_step: bool):
    """A saved state value as torch.optim keeps it: a fused optimizer's step count a float32 on the
    parameter's device, a floating-point moment in the parameter's dtype and device."""
    if not isinstance(value, torch.Tensor):
        return value
    if fused_step:
        return value.to(dtype=torch.float32, device=p.device)
    return value.to(dtype=p.dtype, device=p.device) if p.is_floating_point() else value.to(device=p.device)


class FusedAdamW(ParamGroups):
    """AdamW (decoupled weight decay): one fused kernel for every parameter of a group, as
    torch.optim.AdamW(fused=True) runs it."""

    decoupled = True

    def __init__(self, groups: list[dict], lr: float, betas: tuple[float, float], eps: float, fused: bool = True):
        super().__init__(groups, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": 0.0, "amsgrad": False,
                                  "maximize": False, "foreach": None, "capturable": False,
                                  "differentiable": False, "fused": fused,
                                  "decoupled_weight_decay": self.decoupled})

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            for p in params:  # as torch.optim starts them: a fused optimizer's step count on the device
                if not self.state[p]:
                    self.state[p] = {"step": torch.zeros((), dtype=torch.float32, device=p.device),
                                     "exp_avg": torch.zeros_like(p), "exp_avg_sq": torch.zeros_like(p)}
            states = [self.state[p] for p in params]
            steps = [state["step"] for state in states]
            torch._foreach_add_(steps, 1)
            kernel = torch._fused_adamw_ if group["decoupled_weight_decay"] else torch._fused_adam_
            beta1, beta2 = group["betas"]
            kernel(params, [p.grad for p in params], [s["exp_avg"] for s in states],
                   [s["exp_avg_sq"] for s in states], [], steps, amsgrad=False, lr=group["lr"], beta1=beta1,
                   beta2=beta2, weight_decay=group["weight_decay"], eps=group["eps"], maximize=False,
                   grad_scale=None, found_inf=None)


class FusedAdam(FusedAdamW):
    """Adam: the weight decay added to the gradient, as torch.optim.Adam(fused=True) runs it."""

    decoupled = False


class FastMuon(ParamGroups):
    """optimizer.py's Muon on ParamGroups."""

    def __init__(self, groups: list[dict], lr: float, momentum: float = 0.95, weight_decay: float = 0.0):
        super().__init__(groups, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            muon_update(group, self.state)


FAST_OPTIMIZERS = {"adamw": FusedAdamW, "adam": FusedAdam, "muon": FastMuon}


def fast_optimizer(model: GPT, recipe: TrainConfig):
    """optimizer.py's make_optimizer, built on the classes above."""
    return make_optimizer(model, recipe, FAST_OPTIMIZERS)

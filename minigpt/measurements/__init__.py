"""Measuring a trained model: its loss on names (over all and name by name), what switching a part
off costs, what each head tends to do, each layer's guess at the next character, and the names'
prefixes read once each."""

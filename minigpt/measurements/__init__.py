"""Measuring a trained model: what switching a part off costs, what each head tends to do, each layer's
guess at the next character, and the names' prefixes read once each."""

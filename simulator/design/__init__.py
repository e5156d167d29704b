"""Design a deployment (issue 30): from a lifetime (eps, delta) target over T rounds and a
utility goal to a ranked table of randomizers with their certified eps0, predicted error,
communication and server cost; ``design`` is the one function the CLI and the API call."""

from shufflesim.simulator.design.runner import FIELDS, design

__all__ = ["FIELDS", "design"]

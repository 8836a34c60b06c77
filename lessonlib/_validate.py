"""Argument checks shared by the compute modules: fail loud, name the argument."""
import numpy as np

__all__ = ["int_at_least", "positive_int", "non_negative_int"]


def int_at_least(name, value, minimum):
    """``value`` as an int when it is an integer (not a bool) >= minimum, else ValueError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def positive_int(name, value):
    return int_at_least(name, value, 1)


def non_negative_int(name, value):
    return int_at_least(name, value, 0)

"""A campaign file read and validated (reader.py) and its measurements in the order they run (plan.py)."""

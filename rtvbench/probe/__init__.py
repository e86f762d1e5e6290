"""The host's side of rtvb-probe: where its binary is (binary.py), the rules every record it prints
must follow (schema.py), and its output read record by record (stream.py)."""

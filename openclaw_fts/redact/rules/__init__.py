"""The rule modules of credential masking, grouped by family (see :mod:`..pipeline`)."""

"""Experiments: sweeps of test points, NDR/PDR searches and the statistics behind them.

The modules here take plain values (dicts, dataclasses, callables) so they can
be tested without containers and driven by any runner.
"""

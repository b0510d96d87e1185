"""What cnfperf and this host can run: the one place that decides.

A scenario's fields are valid on their own (scenario.py); here its parts are
held against each other and against the host: the data plane serves the api,
the runtime exists, the engine was built with the api, the host has what the
data plane needs. Four questions, asked at four moments, one module each:

  check(s)             before anything: parts that never go together (exit 2):
                       input.py, with dataplane.py (what a data plane can do)
                       and placement.py (cores, tester, hosts)
  unusable(host)       while a study is planned: points this host cannot run
                       are left out and listed, naming what concerns them
  preflight(s, host)   before a run creates anything: a knob naming what this host
                       has not (host_refusals: exit 2), the host's problems (exit 1)
  matrix(host)         for `cnfperf doctor`: every data plane × api
                       (the last three: host.py)

plans.py makes a file and flags a plan, each point checked once. A plugin's
own rules are the plugin's (DataPlane.scenario_problem, NfKind.check, a
runtime's scenario_problem): these modules ask them. Data planes and runtimes
are imported here, above them, never by scenario.py (they import the
scenario's types themselves). A data plane is named here by no one: each rule
asks the DataPlane class its capabilities and rules (dataplanes/base.py),
resolved once per scenario (dataplane_of).
"""
from __future__ import annotations

from cnfperf.run.checks.dataplane import dataplane_of, nf_ports, switch_problem
from cnfperf.run.checks.host import (host_problems, host_refusals, host_wide, matrix, nf_matrix,
                                     preflight, unusable)
from cnfperf.run.checks.input import check
from cnfperf.run.checks.placement import inventory_file, place_point, point_cpus, tester_crosses
from cnfperf.run.checks.plans import load_plan, plan, replan

__all__ = ["check", "dataplane_of", "host_problems", "host_refusals", "host_wide", "inventory_file",
           "load_plan", "matrix", "nf_matrix", "nf_ports", "place_point", "plan", "point_cpus",
           "preflight", "replan", "switch_problem", "tester_crosses", "unusable"]

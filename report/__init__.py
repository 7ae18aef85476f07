"""HTML reports: ``isrlab report PATH -o report.html`` — one self-contained page about a run,
a campaign, or an era comparison.

Layer 6 of the house, a package of its own (no Spark here): it reads traces through
``traces/`` (the reader, the checker, the explainer, replay for a re-run with message lines)
and nothing imports it but its door, ``cli.report`` (which page for which PATH, output
checks, exit codes). One concept per module, no import circle:

* ``trace_page`` — the page of one trace (verdict, anomalies, the causal chains, partition
  timelines, the space-time diagram, the scenario);
* ``reading`` — one streaming pass over a trace for the plots (and the checker's verdict);
* ``figures`` — the Plotly figures: timelines, the inferred space-time diagram, rate charts;
* ``messages`` — the space-time diagram drawn from real message lines around a chain;
* ``quorum`` — the KRaft controller quorum's section (Raft states, leaderships, votes,
  metadata high watermarks, the controller each broker follows), for a trace that has one;
* ``campaign`` — the campaign (or plain folder) page; ``compare`` — the era-matrix page;
* ``markup`` — the page shell (escaping, tables, inline plotly.js, lazy drawing);
* ``browser`` — a headless Chromium driver (the browser tests and ``bench/report.py``).

Design, as before the move: sources of truth are the checker's counts and examples and the
explainer's chains, never a second computation; one file, offline (plotly.js inlined once,
figures inline, nothing from the network); a 60-simulated-second reference run gives a page
under 5 MB that opens in under 3 s (LEO/HW lines downsampled under one point budget,
``--max-points``; ``bench/report.py``); bad input is one line on stderr and exit 2; a trace
cut off mid-write is reported with a warning.
"""

from __future__ import annotations


class ReportError(Exception):
    """Bad input for a report: ``str()`` is the one line printed before exit 2."""

"""The report generator: rebuilds the papers' tables and curves from the run store as a static HTML site.

``python -m reports.build --runs-dir runs --out reports/out`` (see :mod:`reports.build`). It reads the run
store, and for the papers' facts the benchmark files under ``bench/`` where they exist; the harness core never
imports this package (pandas, matplotlib and seaborn stay in here). Supervised and reinforcement-learning runs
share the store; RL runs (an ``rl`` config section) get learning curves against environment steps and a
final-evaluation table instead of test accuracy.

* :mod:`reports.store`   reads every run directory (results, config, curves, stages, analyses), tolerating
                         damaged runs;
* :mod:`reports.papers`  reads the published tables and facts in ``reports/papers/*.yaml``;
* :mod:`reports.tables`  the numbers on the pages (task x model matrix, published vs ours, run metrics, an RL
                         run's final evaluation);
* :mod:`reports.figures` the figures, as inline SVG;
* :mod:`reports.build`   renders the jinja2 templates in ``reports/templates/`` and writes the site.
"""

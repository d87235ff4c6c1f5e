"""The report generator: rebuilds the papers' tables and curves from the run store as a static HTML site.

``python -m reports.build --runs-dir runs --out reports/out`` (see :mod:`reports.build`). It reads the run
store, and for the papers' facts the benchmark files under ``bench/`` where they exist; the harness core never
imports this package (pandas, matplotlib and seaborn stay in here). Supervised and reinforcement-learning runs
share the store; RL runs (an ``rl`` config section) get learning curves against environment steps and a
final-evaluation table instead of test accuracy.

* :mod:`reports.store`        reads every run directory (results, config, curves, stages, analyses), tolerating
                              damaged runs;
* :mod:`reports.papers`       reads the published tables and facts in ``reports/papers/*.yaml``;
* :mod:`reports.tables`       what the pages' tables share: the headline metric, number formats, status counts;
* :mod:`reports.index_tables` the index's task x model matrix, its rankings per task and setting, and its runs;
* :mod:`reports.solved`       when a seed has solved a task (``reports/solved.yaml``), for the rankings;
* :mod:`reports.paper_tables` a paper page's published-vs-ours tables; :mod:`reports.facts` its facts;
* :mod:`reports.run_tables`   a run page's metrics, stages and predictions; :mod:`reports.rl_tables` an RL run's
                              final evaluation;
* :mod:`reports.run_progress` how far a run got; :mod:`reports.stops` what ended it; :mod:`reports.budgets` the
                              budget that trains a capped run again without its cap;
* :mod:`reports.figures`      the figures, as inline SVG;
* :mod:`reports.build`        renders the jinja2 templates in ``reports/templates/`` and writes the site.
"""

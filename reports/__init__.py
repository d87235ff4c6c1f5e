"""The report generator: rebuilds the papers' tables and curves from the run store as HTML.

It reads only the run store (``runs/``); the generator itself arrives with the sweeps and report work
(see the README's roadmap).
"""

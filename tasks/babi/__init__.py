"""bAbI question answering (Weston et al. 2015), the 20 tasks of v1.2."""

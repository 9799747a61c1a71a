"""``sentient eval``: measure answer quality against closed-book and retrieve-then-answer baselines."""

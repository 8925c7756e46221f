"""Self-checks the end-to-end tests run on a real experiment: the exported frames and the HTML report."""

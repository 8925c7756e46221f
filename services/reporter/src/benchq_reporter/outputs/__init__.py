"""What the reporter writes besides the summary: the HTML report, the comparison of experiments, the exported frames."""

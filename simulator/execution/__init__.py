"""Running a scenario: its units of work, the executors that run them, resumable part files,
the table producers and progress reports."""

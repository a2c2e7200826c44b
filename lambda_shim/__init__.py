"""The Lambda stand-in: the handler deployed to AWS as is, and the watcher invoking it locally."""

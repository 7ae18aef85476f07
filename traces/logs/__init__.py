"""Kafka broker and controller logs read into isrlab traces (``isrlab import``).

``lines`` frames log4j records out of log files (timestamps, levels, loggers, continuation
lines, gzip, rotated files); ``kinds`` recognises the replication-relevant messages, one
regular expression per format string in Kafka's source (cited); ``importer`` writes the
records it understood as an isrlab trace that says it is imported.
"""

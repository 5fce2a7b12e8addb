"""An example host application that stores OpenClaw transcripts through openclaw-fts."""

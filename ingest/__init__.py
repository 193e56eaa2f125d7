"""Turn Kineto / Chrome-trace JSON files into Parquet tables in a tracewh warehouse."""

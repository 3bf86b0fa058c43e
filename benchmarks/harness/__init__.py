"""What every benchmark shares, so that each benchmark module holds only its scenario.

- ``broker``: a private mosquitto on a free 127.0.0.1 port, with the benchmarks' tuned
  configuration or another one;
- ``procs``: child processes in their own sessions, their logs, stopping them all;
- ``peers``: child processes that report in JSON lines, from the event loop;
- ``machine``: cores, load, versions and the library's revision, for a report's header;
- ``measure``: memory and CPU time from /proc, and peaks sampled from a thread;
- ``stats``: percentiles, medians with ranges, number formats;
- ``results``: the results folder or file, ``--update-results``, Markdown and JSON;
- ``cli``: the parser, argument types, exit statuses and SIGTERM handling of a run.
"""

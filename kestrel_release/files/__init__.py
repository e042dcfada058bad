"""Files and paths: atomic writes and the project lock (fsutil), where the tool may write (safepaths),
its working files (statedir) and bounded JSON reading (safejson)."""

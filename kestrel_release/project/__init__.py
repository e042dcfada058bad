"""The user's project and its builds: name and version (meta), its CUDA code (package_cuda, cuda_gate),
its C++ standard (cxx_std), the clean source copy and build envs builds run in (source_copy, build_env),
a build log's first error (build_log), and where its version is written (version_pattern)."""

def pytest_configure(config):
    # Registered here: the project's pyproject.toml holds only [build-system] and the release table.
    config.addinivalue_line("markers", "gpu: needs an NVIDIA sm_90 GPU (H100) and the built extension")

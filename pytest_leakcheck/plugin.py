"""pytest plugin entry point (``pytest --leakcheck``); see issue 3 for the full plugin."""

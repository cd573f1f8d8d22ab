"""The one way anything calls a model: the model clients (``targets/``), the retry policy and the
decompression limits on replies. Used by execute (generation) and scoring (judges); imports nothing
from either, so a judge's call and a generation call share one code path and one set of guards."""

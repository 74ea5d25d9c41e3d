import pytest


@pytest.fixture(autouse=True)
def fresh_caches():
    from apps.runs import service
    service.clear_cache()
    yield

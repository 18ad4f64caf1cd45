from tests.fleet.conftest import fleet_dir

__all__ = ["fleet_dir"]

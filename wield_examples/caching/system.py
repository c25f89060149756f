"""The system side: a buffer pool that caches pages, its workload, the task design (schema and converter)
and two eviction rules (LRU and LFU)."""
from collections import namedtuple

import gymnasium as gym
import numpy as np

from wield import Converter, Label, LabellingRule, Schema, SystemAdapter, make_rng

Frame = namedtuple("Frame", "page age uses pinned")  # age: requests since the page's last use


def page_requests(seed: int, length: int, pages: int, scan_share: float) -> list[int]:
    """Workload generator: ``length`` page requests. Most go to a hot quarter of the pages, with Zipf-like
    popularity; with probability ``scan_share`` a request starts a scan that reads 8 cold pages once each."""
    rng = make_rng(seed, "requests")
    popularity = 1.0 / np.arange(1, pages // 4 + 1)  # of the hot pages 0, 1, ...
    requests = []
    while len(requests) < length:
        if rng.random() < scan_share:
            start = int(rng.integers(len(popularity), pages - 8))
            requests.extend(range(start, start + 8))
        else:
            requests.append(int(rng.choice(len(popularity), p=popularity / popularity.sum())))
    return requests[:length]


class BufferPool(SystemAdapter):
    """A pool of page frames. A request for a cached page is a hit; a miss loads the page into a free frame
    or, once every frame is full, into the frame of a page the agent evicts: only those misses need a
    decision. Pinned pages (those of the last requests, still in use) cannot be evicted."""

    def __init__(self, frames: int):
        self.capacity = frames
        self.reset()

    def reset(self):
        self.frames, self.recent = [], []  # the page in each frame; the pages of the last requests
        self.last_use, self.uses = {}, {}  # per page: the request of its last use; its uses so far
        self.clock = self.hits = 0

    def state(self) -> list[Frame]:
        return [Frame(page, self.clock - self.last_use[page], self.uses[page], page in self.recent)
                for page in self.frames]

    def needs_decision(self, context) -> bool:
        return context["item"] not in self.frames and len(self.frames) == self.capacity

    def skip(self, context):  # a hit, or a miss while a frame is free: nothing to evict
        self.apply((None, context["item"]))

    def apply(self, action):
        victim, page = action
        self.hit = page in self.frames
        self.hits += int(self.hit)
        if victim is not None:  # a decision: the miss replaces the victim
            self.frames[self.frames.index(victim)] = page
        elif not self.hit:
            self.frames.append(page)
        self.last_use[page] = self.clock
        self.uses[page] = self.uses.get(page, 0) + 1
        self.recent = (self.recent + [page])[-2:]  # the pages of the last two requests are pinned
        self.clock += 1

    def measure(self, workload) -> dict:
        return {"hit": self.hit, "hit_rate": self.hits / self.clock}


class PoolSchema(Schema):
    """State: per frame, log(1 + age), log(1 + uses) and pinned; action: the frame whose page is evicted,
    one of the unpinned frames."""

    def __init__(self, frames: int):
        self.state_space = gym.spaces.Box(0.0, np.inf, (3 * frames,), np.float32)
        self.action_space = gym.spaces.Discrete(frames)

    def action_mask(self, context) -> np.ndarray:
        return np.array([not frame.pinned for frame in context["state"]])


class PoolConverter(Converter):
    """Action i evicts the page in frame i; the reward is 1 per hit, so a decision earns the hits that
    follow it until the next miss (the environment adds skipped steps' rewards to the decision before)."""

    def system_to_agent_state(self, frames, context) -> np.ndarray:
        rows = [(np.log1p(frame.age), np.log1p(frame.uses), frame.pinned) for frame in frames]
        return np.array(rows, np.float32).reshape(-1)

    def agent_to_system_action(self, action, context) -> tuple:
        return context["state"][int(action)].page, context["item"]  # (evicted page, loaded page)

    def system_to_agent_reward(self, metrics, context) -> float:
        return 1.0 if metrics["hit"] else 0.0


class LRU(LabellingRule):
    """Evict the unpinned page used least recently."""
    name = "lru"

    def label(self, frames, context) -> Label:
        victim = max((frame for frame in frames if not frame.pinned), key=lambda frame: frame.age)
        return Label((victim.page, context["item"]), margin=0.5)


class LFU(LabellingRule):
    """Evict the unpinned page used least often (of those, the least recently used)."""
    name = "lfu"

    def label(self, frames, context) -> Label:
        victim = min((frame for frame in frames if not frame.pinned), key=lambda frame: (frame.uses, -frame.age))
        return Label((victim.page, context["item"]), margin=0.5)

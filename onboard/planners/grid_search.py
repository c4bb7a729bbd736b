"""Shortest paths over the free cells of a 2D occupancy window (8-connected), compiled with numba.

The avoiding planner searches a window of about 145 x 145 cells several times a second for the cell to
head for: the goal's if it is in the window and reachable, else the window's edge cell that minimizes
path length plus straight-line distance to the goal. Building a sparse graph for scipy's Dijkstra and
running it over the whole window cost about 6 ms a search, a seventh of a FLYINGTRUST matrix trial.
Compiled, and searching best-first with the straight-line distance as the estimate (A*), the search stops
at that cell, usually long before the window is exhausted.

Steps go to the 8 neighbours, 1 cell straight and sqrt 2 diagonally, between free cells only, and never
cut a corner: a diagonal step needs both cells it passes between free. Cells are taken in order of path
length plus estimate, then of discovery, so among equally good paths the one found first stands and a
search is deterministic.
"""

from __future__ import annotations

import math

import numba
import numpy as np

# The 8 steps (row, column) and their lengths in cells.
STEPS = np.array([(0, 1), (1, -1), (1, 0), (1, 1), (-1, -1), (-1, 0), (-1, 1), (0, -1)], dtype=np.int64)
STEP_LENGTHS = np.array([math.hypot(di, dj) for di, dj in STEPS])


def shortest_paths(blocked: np.ndarray, start: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Distances (cells) from `start` to every cell of `blocked` in row-major order, inf where unreachable,
    and each cell's predecessor on its shortest path (-1 for the start and unreachable cells).

    A blocked start reaches nothing but itself.
    """
    distance, previous, _ = search(blocked, start, np.zeros(blocked.size), -1, False)
    return distance, previous


def search(blocked: np.ndarray, start: tuple[int, int], estimate: np.ndarray, goal: int,
           stop_at_edge: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """Best-first search from `start` until it takes the cell `goal` (a row-major index; -1 for none) or,
    with `stop_at_edge`, any cell on the window's edge; returns distances and predecessors as
    `shortest_paths` does (final for every cell taken, inf or a bound for the rest) and the cell it
    stopped at, -1 if it ran out of cells.

    `estimate` (row-major, cells) must never exceed a cell's path length to where the search is to stop,
    nor drop by more than a step's length across a step (the straight-line distance to a point does
    both): then the cell it stops at is the one of least path length plus estimate.
    """
    return _search(np.ascontiguousarray(blocked, dtype=np.bool_), int(start[0]), int(start[1]),
                   np.ascontiguousarray(estimate, dtype=float), int(goal), bool(stop_at_edge), STEPS, STEP_LENGTHS)


@numba.njit(cache=True)
def _search(blocked: np.ndarray, start_row: int, start_col: int, estimate: np.ndarray, goal: int,
            stop_at_edge: bool, steps: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    rows, cols = blocked.shape
    distance = np.full(rows * cols, np.inf)
    previous = np.full(rows * cols, -1, dtype=np.int64)
    done = np.zeros(rows * cols, dtype=np.bool_)
    # A binary heap of (path length + estimate, discovery number, cell); a cell whose distance improves is
    # pushed again and its stale entries are skipped when they surface. Each push follows an improvement.
    capacity = 8 * rows * cols + 1
    heap_key = np.empty(capacity)
    heap_order = np.empty(capacity, dtype=np.int64)
    heap_cell = np.empty(capacity, dtype=np.int64)
    start = start_row * cols + start_col
    distance[start] = 0.0
    size = _push(heap_key, heap_order, heap_cell, 0, estimate[start], 0, start)
    pushed = 1
    while size:
        cell = heap_cell[0]
        size = _pop(heap_key, heap_order, heap_cell, size)
        if done[cell]:
            continue
        done[cell] = True
        row, col = cell // cols, cell % cols
        if cell == goal or (stop_at_edge and (row == 0 or col == 0 or row == rows - 1 or col == cols - 1)):
            return distance, previous, cell
        if blocked[row, col]:
            continue
        here = distance[cell]
        for k in range(steps.shape[0]):
            di, dj = steps[k, 0], steps[k, 1]
            r, c = row + di, col + dj
            if r < 0 or r >= rows or c < 0 or c >= cols or blocked[r, c] or blocked[r, col] or blocked[row, c]:
                continue
            neighbour = r * cols + c
            candidate = here + lengths[k]
            if candidate < distance[neighbour]:
                distance[neighbour] = candidate
                previous[neighbour] = cell
                size = _push(heap_key, heap_order, heap_cell, size, candidate + estimate[neighbour], pushed,
                             neighbour)
                pushed += 1
    return distance, previous, -1


@numba.njit(cache=True)
def _push(heap_key: np.ndarray, heap_order: np.ndarray, heap_cell: np.ndarray, size: int,
          value: float, order: int, cell: int) -> int:
    """Add an entry; returns the new size. Entries move down into the hole rather than swapping."""
    child = size
    while child > 0:
        parent = (child - 1) // 2
        if heap_key[parent] < value or (heap_key[parent] == value and heap_order[parent] < order):
            break
        heap_key[child], heap_order[child], heap_cell[child] = \
            heap_key[parent], heap_order[parent], heap_cell[parent]
        child = parent
    heap_key[child], heap_order[child], heap_cell[child] = value, order, cell
    return size + 1


@numba.njit(cache=True)
def _pop(heap_key: np.ndarray, heap_order: np.ndarray, heap_cell: np.ndarray, size: int) -> int:
    """Remove the first entry; returns the new size."""
    size -= 1
    value, order, cell = heap_key[size], heap_order[size], heap_cell[size]
    parent = 0
    while True:
        child = 2 * parent + 1
        if child >= size:
            break
        if child + 1 < size and (heap_key[child + 1] < heap_key[child] or (
                heap_key[child + 1] == heap_key[child] and heap_order[child + 1] < heap_order[child])):
            child += 1
        if value < heap_key[child] or (value == heap_key[child] and order < heap_order[child]):
            break
        heap_key[parent], heap_order[parent], heap_cell[parent] = \
            heap_key[child], heap_order[child], heap_cell[child]
        parent = child
    heap_key[parent], heap_order[parent], heap_cell[parent] = value, order, cell
    return size

"""Dashboard benchmark (headless Chromium): render a 1,000-node snapshot, then keep the graph
live under 100 node updates per second.

    python bench/dashboard_bench.py                  # readable summary
    python bench/dashboard_bench.py --json           # one JSON object on stdout
    python bench/dashboard_bench.py --nodes 2000 --rate 200 --seconds 10

It serves the committed build (``dashboard/dist``) from a loopback HTTP server, answers the few
REST calls the page makes on load with canned JSON (``page.route``), opens ``/?bench`` and feeds
the store through the page's bench hook (``window.sentientBench``, installed only with ``?bench``):
the same ``snapshot`` and ``node_update`` actions the Socket.IO handlers call. So it measures the
dashboard alone: store, layout, React Flow, paint — no server, no engine.

Measures:
- **snapshot → complete render**: from handing the snapshot to the store until every node is in
  the DOM, visible, with the fitted viewport, and a frame has been painted (target ≤ 1 s);
- **frame time under updates**: ``requestAnimationFrame`` intervals while 100 whole-node updates
  a second arrive in 10 batches (the server batches every 100 ms) (target ≤ 50 ms, p95 and max).

Targets are reported, never asserted.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import platform
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Route, sync_playwright

REPO = Path(__file__).resolve().parents[1]
DIST = REPO / "dashboard" / "dist"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PROJECT_ID = "bench"
STATUSES = ["READY", "EXECUTING", "DONE", "PLANNING", "AGGREGATING", "PLAN_DONE"]


def make_tree(count: int, fanout: int = 10) -> dict[str, dict[str, Any]]:
    """A breadth-first tree of exactly ``count`` nodes, ``fanout`` children each (root, 10, 100, 889…)."""
    nodes: dict[str, dict[str, Any]] = {}
    queue = ["root"]
    nodes["root"] = _node("root", None, 0)
    while queue and len(nodes) < count:
        parent = queue.pop(0)
        for i in range(fanout):
            if len(nodes) >= count:
                break
            child = f"{parent}.{i}"
            node = _node(child, parent, nodes[parent]["layer"] + 1)
            if i % 3 == 2:
                node["depends_on"] = [f"{parent}.{i - 1}"]
            nodes[child] = node
            nodes[parent]["children"].append(child)
            nodes[parent]["node_type"] = "PLAN"
            queue.append(child)
    return nodes


def _node(task_id: str, parent: str | None, layer: int) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "parent_id": parent,
        "goal": f"Investigate aspect {task_id} of the research question in enough detail to cite sources",
        "task_type": ["SEARCH", "THINK", "WRITE"][len(task_id) % 3],
        "node_type": "EXECUTE",
        "layer": layer,
        "status": "PENDING",
        "depends_on": [],
        "children": [],
        "result": None,
        "error": None,
        "sources": [],
        "agent_calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
        "history": [{"status": "PENDING", "at": time.time()}],
        "warnings": [],
    }


def project(count: int) -> dict[str, Any]:
    now = time.time()
    return {
        "project_id": PROJECT_ID,
        "goal": f"Benchmark: {count} nodes",
        "profile": "deep_research_agent",
        "status": "running",
        "created_at": now,
        "updated_at": now,
        "error": None,
        "settings": {},
        "stats": {"nodes": count},
        "pending_reviews": 0,
    }


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve_dist() -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_QuietHandler, directory=str(DIST))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


RENDER_JS = """
async ([snapshot, expected]) => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
  const t0 = performance.now();
  window.sentientBench.snapshot(snapshot);
  for (;;) {
    await frame();
    // Zoomed out, a big tree is drawn on the overview canvas; zoomed in, as DOM nodes.
    const canvas = document.querySelector('[data-testid=graph-overview]');
    if (canvas && Number(canvas.dataset.drawnNodes) >= expected) break;
    const nodes = document.querySelectorAll('.react-flow__node:not([style*="visibility: hidden"])');
    if (nodes.length >= expected) break;
    if (performance.now() - t0 > 30000) throw new Error('render did not complete: ' + nodes.length);
  }
  await frame();  // the frame with every node has been painted
  return performance.now() - t0;
}
"""

IDLE_JS = """
async (seconds) => {
  const intervals = [];
  let last = performance.now();
  const end = last + seconds * 1000;
  await new Promise((resolve) => {
    const tick = (now) => { intervals.push(now - last); last = now; if (now < end) requestAnimationFrame(tick); else resolve(); };
    requestAnimationFrame(tick);
  });
  intervals.shift();
  return intervals;
}
"""

UPDATES_JS = """
async ([ids, statuses, rate, seconds]) => {
  const intervals = [];
  let last = performance.now();
  let running = true;
  const tick = (now) => { intervals.push(now - last); last = now; if (running) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  const perBatch = Math.max(1, Math.round(rate / 10));
  let sent = 0, k = 0, applyMs = [];
  const timer = setInterval(() => {
    const batch = [];
    for (let i = 0; i < perBatch; i++) {
      const id = ids[(k * 7919 + i * 104729) % ids.length];
      const node = window.sentientBench.node(id);
      batch.push({ ...node, status: statuses[(k + i) % statuses.length], agent_calls: node.agent_calls + 1 });
    }
    k++;
    const t = performance.now();
    window.sentientBench.nodeUpdate('bench', batch);
    applyMs.push(performance.now() - t);
    sent += batch.length;
  }, 100);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  clearInterval(timer);
  running = false;
  intervals.shift();
  return { intervals, sent, applyMs };
}
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(count: int, rate: int, seconds: float, repeat: int) -> dict[str, Any]:
    if not (DIST / "index.html").is_file():
        raise SystemExit("dashboard/dist is missing: run dashboard/build.sh")
    nodes = make_tree(count)
    snapshot = {"project": project(count), "graph": {"nodes": nodes, "root": "root"}, "reviews": []}
    empty = {"project_id": PROJECT_ID, "nodes": {}, "root": None}
    canned = {
        "/api/projects": {"projects": [project(count)]},
        f"/api/projects/{PROJECT_ID}": project(count),
        f"/api/projects/{PROJECT_ID}/graph": empty,
        f"/api/projects/{PROJECT_ID}/reviews": {"reviews": []},
        "/api/profiles": {"profiles": []},
    }

    def answer(route: Route) -> None:
        path = route.request.url.split("://", 1)[1].split("/", 1)[1].split("?")[0]
        body = canned.get("/" + path)
        if body is None:
            route.fulfill(status=404, json={"error": {"code": "not_found", "message": path}})
        else:
            route.fulfill(status=200, json=body)

    httpd, base = serve_dist()
    renders: list[float] = []
    frames: list[float] = []
    apply_ms: list[float] = []
    idle: list[float] = []
    detail_frames: list[float] = []
    detail_counts: list[int] = []
    sent = 0
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for _ in range(repeat):
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                page.route("**/api/**", answer)
                page.route("**/socket.io/**", lambda route: route.abort())
                page.goto(f"{base}/?bench&project={PROJECT_ID}")
                page.wait_for_selector(".react-flow")
                page.wait_for_timeout(300)  # let the initial (empty) REST catch-up land first
                renders.append(page.evaluate(RENDER_JS, [snapshot, count]))
                idle += page.evaluate(IDLE_JS, 1.0)
                result = page.evaluate(UPDATES_JS, [list(nodes), STATUSES, rate, seconds])
                frames += result["intervals"]
                apply_ms += result["applyMs"]
                sent += result["sent"]
                # Zoom in on a task (a click on the overview does that): DOM nodes, same update stream.
                box = page.locator(".react-flow__pane").bounding_box()
                assert box is not None
                page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
                page.wait_for_selector(".react-flow__node", timeout=10_000)
                detail_counts.append(page.locator(".react-flow__node").count())
                page.wait_for_timeout(300)
                result = page.evaluate(UPDATES_JS, [list(nodes), STATUSES, rate, seconds])
                detail_frames += result["intervals"]
                page.close()
            version = browser.version
            browser.close()
    finally:
        httpd.shutdown()
    return {
        "nodes": count,
        "repeat": repeat,
        "chromium": version,
        "python": platform.python_version(),
        "snapshot_render_ms": {"median": statistics.median(renders), "max": max(renders), "runs": renders},
        "updates": {
            "rate_per_s": rate,
            "seconds": seconds,
            "updates_sent": sent,
            "frames": len(frames),
            "frame_ms_mean": statistics.fmean(frames),
            "frame_ms_p95": percentile(frames, 0.95),
            "frame_ms_max": max(frames),
            "store_apply_ms_mean": statistics.fmean(apply_ms),
        },
        "idle_frame_ms_mean": statistics.fmean(idle),
        "zoomed_in": {
            "dom_nodes": detail_counts,
            "frame_ms_mean": statistics.fmean(detail_frames),
            "frame_ms_p95": percentile(detail_frames, 0.95),
            "frame_ms_max": max(detail_frames),
        },
        "targets": {"snapshot_render_ms": 1000, "frame_ms": 50},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=100, help="node updates per second")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.nodes, args.rate, args.seconds, args.repeat)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    r, u = result["snapshot_render_ms"], result["updates"]
    print(f"Chromium {result['chromium']}, {result['nodes']} nodes, {result['repeat']} runs")
    print(f"snapshot -> complete render: median {r['median']:.0f} ms, max {r['max']:.0f} ms   (target <= 1000 ms)")
    print(
        f"{u['rate_per_s']} updates/s for {u['seconds']:.0f} s ({u['updates_sent']} sent, {u['frames']} frames): "
        f"frame mean {u['frame_ms_mean']:.1f} ms, p95 {u['frame_ms_p95']:.1f} ms, max {u['frame_ms_max']:.1f} ms"
        f"   (target <= 50 ms)"
    )
    z = result["zoomed_in"]
    print(
        f"zoomed in on a task ({z['dom_nodes'][0]} tasks in view as DOM nodes), same updates: "
        f"frame mean {z['frame_ms_mean']:.1f} ms, p95 {z['frame_ms_p95']:.1f} ms, max {z['frame_ms_max']:.1f} ms"
    )
    print(
        f"store apply per batch: mean {u['store_apply_ms_mean']:.2f} ms; idle frame (no updates) mean {result['idle_frame_ms_mean']:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

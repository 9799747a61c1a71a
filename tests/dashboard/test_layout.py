"""The dashboard's layout in a narrow (800 px) and a wide (1280 px) window, in a real headless
Chromium: nothing overflows, and the node inspector never hides the selected task. Screenshots of
each view go to project_results/dashboard-screenshots/."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect
from test_dashboard import create_project, wait_completed

WIDTHS = [800, 1280]
HEIGHT = 800

# What sticks out: the page scrolling sideways, a region wider than its box, a top-bar item
# outside the bar or over another one.
LAYOUT_PROBLEMS = """() => {
  const width = document.documentElement.clientWidth;
  const problems = [];
  if (document.documentElement.scrollWidth > width) problems.push(`the page scrolls sideways (${document.documentElement.scrollWidth} px)`);
  const regions = ['.topbar', '.topbar-title', '.topbar-tools', '.topbar-stats', '.topbar-actions', '.graph-toolbar', '.inspector', '.report', '.report-body', '.report-toolbar'];
  for (const selector of regions) {
    for (const el of document.querySelectorAll(selector)) {
      if (el.scrollWidth > el.clientWidth + 1) problems.push(`${selector} overflows (${el.scrollWidth} > ${el.clientWidth} px)`);
      const box = el.getBoundingClientRect();
      if (box.right > width + 0.5) problems.push(`${selector} ends at ${Math.round(box.right)} px, past the window`);
    }
  }
  const bar = document.querySelector('.topbar').getBoundingClientRect();
  for (const row of document.querySelectorAll('.topbar, .topbar-tools')) {
    const items = [...row.children].map(el => [el.className, el.getBoundingClientRect()]);
    for (const [name, r] of items) {
      if (r.left < bar.left - 0.5 || r.right > bar.right + 0.5) problems.push(`top bar: ${name} sticks out`);
    }
    items.forEach(([a, r], i) => items.slice(i + 1).forEach(([b, s]) => {
      if (r.left < s.right - 0.5 && s.left < r.right - 0.5 && r.top < s.bottom - 0.5 && s.top < r.bottom - 0.5) problems.push(`top bar: ${a} overlaps ${b}`);
    }));
  }
  return problems;
}"""

# The selected task's box lies inside the graph's.
IN_VIEW = """id => {
  const graph = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  const task = document.querySelector(`[data-task-id='${id}']`);
  if (!task) return false;
  const r = task.getBoundingClientRect();
  return r.left >= graph.left && r.right <= graph.right && r.top >= graph.top && r.bottom <= graph.bottom;
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_top_bar_graph_inspector_and_report_fit_the_window(
    page: Any, live_server: Any, problems: Any, screenshot: Any, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": HEIGHT})
    page.goto(live_server.url)

    # The fullest top bar: a running project with a plan to review, its totals and every action.
    create_project(page, f"Layout at {width} px: how hospitals adopt imaging AI, by region and budget", review="root")
    page.get_by_test_id("review-dialog").get_by_label("Close (decide later)").click()
    expect(page.get_by_test_id("open-review")).to_be_visible()
    expect(page.get_by_test_id("cancel-project")).to_be_visible()
    assert page.evaluate(LAYOUT_PROBLEMS) == []
    screenshot(page, f"layout-{width}-running")
    page.get_by_test_id("open-review").click()
    page.get_by_test_id("approve-plan").click()
    wait_completed(page)

    page.locator("[data-task-id='root.1']").click()
    expect(page.get_by_test_id("inspector")).to_be_visible()
    page.wait_for_function(IN_VIEW, arg="root.1")
    assert page.evaluate(LAYOUT_PROBLEMS) == []
    screenshot(page, f"layout-{width}-inspector")

    page.get_by_test_id("report-tab").click()
    expect(page.get_by_test_id("report-body")).to_contain_text("Summary of root")
    assert page.evaluate(LAYOUT_PROBLEMS) == []
    screenshot(page, f"layout-{width}-report")
    assert problems.errors == []


@pytest.mark.parametrize("width", WIDTHS)
def test_the_inspector_never_hides_the_selected_task(page: Any, live_server: Any, problems: Any, width: int) -> None:
    page.set_viewport_size({"width": width, "height": HEIGHT})
    page.goto(live_server.url)
    create_project(page, f"Inspector at {width} px: keep the selected task in view")
    wait_completed(page)

    # The tree as fitted: opening the inspector fits it again in the room left.
    for task_id in ["root.1", "root", "root.0"]:
        page.locator(f"[data-task-id='{task_id}']").click()
        expect(page.get_by_test_id("inspector-goal")).to_be_visible()
        page.wait_for_function(IN_VIEW, arg=task_id, timeout=5_000)
    page.get_by_label("Close inspector").click()
    expect(page.get_by_test_id("inspector")).to_be_hidden()

    # Zoomed in by the user on a task: opening the inspector pans that task back into view.
    task = page.locator("[data-task-id='root.1']")
    box = task.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -600)
    page.wait_for_function(
        "w => document.querySelector(`[data-task-id='root.1']`).getBoundingClientRect().width > w * 1.3",
        arg=box["width"],
    )
    task.click()
    expect(page.get_by_test_id("inspector-goal")).to_contain_text("Write up")
    page.wait_for_function(IN_VIEW, arg="root.1", timeout=5_000)
    assert problems.errors == []

// Keeping a task in view: the pan that brings a box on screen inside the graph's pane.

/** Room kept between a task brought into view and the edge of the graph. */
const VIEW_MARGIN = 24;

/**
 * How far to pan a viewport of ``width`` x ``height`` so that the box [left, right] x [top,
 * bottom] (screen pixels) is inside it; a box larger than the viewport shows its top left.
 */
export function panIntoView(
  box: { left: number; top: number; right: number; bottom: number },
  width: number,
  height: number,
  margin = VIEW_MARGIN,
): { dx: number; dy: number } {
  const shift = (low: number, high: number, size: number) => {
    if (high > size - margin) return Math.max(size - margin - high, margin - low);
    if (low < margin) return margin - low;
    return 0;
  };
  return { dx: shift(box.left, box.right, width), dy: shift(box.top, box.bottom, height) };
}

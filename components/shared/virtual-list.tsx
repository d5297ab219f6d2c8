'use client';

import { useVirtualizer } from '@tanstack/react-virtual';
import { memo, useEffect, useRef, useState, type CSSProperties, type KeyboardEvent, type ReactNode } from 'react';

export interface VirtualListProps<T> {
  readonly items: readonly T[];
  /**
   * How many rows the list has, when `items` holds only its first ones (a server-rendered first
   * screen): the scroll height is for all of them; default `items.length`.
   */
  readonly count?: number;
  /** Every row is exactly this tall (px); the window arithmetic depends on it. */
  readonly rowHeight: number;
  /** The most the scroll container grows to (px); shorter lists take only their height. */
  readonly maxHeight: number;
  readonly getKey: (item: T) => string;
  /** Renders one row; it must be `rowHeight` tall. `active` is the keyboard-focused row. */
  readonly renderRow: (item: T, index: number, active: boolean) => ReactNode;
  readonly overscan?: number;
  /** Labels the scroll region for screen readers. */
  readonly label: string;
  /** Rows before the first item (header rows), for `aria-rowindex`; default 1. */
  readonly ariaRowOffset?: number;
  /** Enter on a focused row (not on a control inside it). */
  readonly onActivate?: (item: T) => void;
  /** Extra style of every row (e.g. its grid columns); position and height are the list's. */
  readonly rowStyle?: CSSProperties;
}

interface VirtualRowProps {
  readonly rowKey: string;
  readonly item: unknown;
  readonly index: number;
  readonly ariaRowIndex: number;
  readonly start: number;
  readonly rowHeight: number;
  readonly active: boolean;
  readonly rowStyle: CSSProperties | undefined;
  readonly renderRow: (item: unknown, index: number, active: boolean) => ReactNode;
  readonly onFocusRow: (index: number) => void;
}

/**
 * One positioned row. Memoized: when the list re-renders for a change elsewhere (a live update
 * of other items), a row whose item, position and focus are the same is not rendered again, and
 * React does not compare its style and attributes.
 */
const VirtualRow = memo(function VirtualRow({ rowKey, item, index, ariaRowIndex, start, rowHeight, active, rowStyle, renderRow, onFocusRow }: VirtualRowProps) {
  return (
    <div
      className="vlist__row"
      role="row"
      aria-rowindex={ariaRowIndex}
      data-index={index}
      data-key={rowKey}
      tabIndex={active ? 0 : -1}
      onFocus={() => {
        onFocusRow(index);
      }}
      style={{ ...rowStyle, transform: `translateY(${start}px)`, height: rowHeight }}
    >
      {renderRow(item, index, active)}
    </div>
  );
});

/**
 * A windowed list with fixed row heights: only the rows in view (plus overscan) are in the DOM,
 * positioned inside a spacer as tall as all rows, so 10,000 rows scroll like 30. The window is
 * `@tanstack/react-virtual`'s; before the first layout (and on the server) it assumes the list is
 * `maxHeight` tall at the top. Arrow keys, Page Up/Down, Home and End move a roving focus between
 * rows, scrolling the focused row into view.
 */
export function VirtualList<T>({ items, count: allRows, rowHeight, maxHeight, getKey, renderRow, overscan = 8, label, ariaRowOffset = 1, onActivate, rowStyle }: VirtualListProps<T>) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const [active, setActive] = useState(0);
  const focusPending = useRef(false);
  const count = allRows ?? items.length;
  // Rows are keyed by index in the virtualizer (the default): with fixed heights its positions
  // depend on the count only, so a delta that replaces the items does not make it recompute
  // every row's position. React keys are `getKey`'s.
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => rowHeight,
    overscan,
    initialRect: { width: 0, height: maxHeight },
  });
  const activeIndex = Math.min(active, Math.max(0, count - 1));

  // After a key moved the focus: focus the row once it is rendered (a far jump renders it only
  // after the scroll it caused).
  useEffect(() => {
    if (!focusPending.current) return;
    const row = scrollRef.current?.querySelector<HTMLElement>(`[data-index="${activeIndex}"]`);
    if (row === null || row === undefined) return;
    focusPending.current = false;
    row.focus({ preventScroll: true });
  });

  const moveTo = (index: number): void => {
    const next = Math.max(0, Math.min(count - 1, index));
    virtualizer.scrollToIndex(next, { align: 'auto' });
    focusPending.current = true;
    setActive(next);
  };

  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>): void => {
    if (count === 0) return;
    if (e.key === 'Enter' && e.target instanceof HTMLElement && e.target.dataset.index !== undefined) {
      const item = items[Number(e.target.dataset.index)];
      if (item !== undefined && onActivate !== undefined) {
        e.preventDefault();
        onActivate(item);
      }
      return;
    }
    const height = scrollRef.current?.clientHeight ?? maxHeight;
    const page = Math.max(1, Math.floor(height / rowHeight) - 1);
    const keys: Record<string, number> = {
      ArrowDown: activeIndex + 1,
      ArrowUp: activeIndex - 1,
      PageDown: activeIndex + page,
      PageUp: activeIndex - page,
      Home: 0,
      End: count - 1,
    };
    const target = keys[e.key];
    if (target === undefined) return;
    if (e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement) return;
    e.preventDefault();
    moveTo(target);
  };

  const rows: ReactNode[] = [];
  for (const row of virtualizer.getVirtualItems()) {
    const i = row.index;
    const item = items[i];
    if (item === undefined) continue;
    const key = getKey(item);
    rows.push(
      <VirtualRow
        key={key}
        rowKey={key}
        item={item}
        index={i}
        ariaRowIndex={i + 1 + ariaRowOffset}
        start={row.start}
        rowHeight={rowHeight}
        active={i === activeIndex}
        rowStyle={rowStyle}
        renderRow={renderRow as (item: unknown, index: number, active: boolean) => ReactNode}
        onFocusRow={setActive}
      />,
    );
  }
  return (
    <div
      ref={scrollRef}
      className="vlist"
      role="rowgroup"
      aria-label={label}
      onKeyDown={onKeyDown}
      style={{ maxHeight, height: Math.min(maxHeight, Math.max(rowHeight, count * rowHeight)) }}
    >
      <div className="vlist__spacer" style={{ height: virtualizer.getTotalSize() }}>
        {rows}
      </div>
    </div>
  );
}

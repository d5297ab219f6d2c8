'use client';

import { useCallback, useEffect, useLayoutEffect, useRef, useState, type CSSProperties, type KeyboardEvent, type ReactNode } from 'react';

/** The rows a window of `height` px at `scrollTop` shows, plus `overscan` on each side. */
export function visibleRange(count: number, rowHeight: number, scrollTop: number, height: number, overscan: number): { start: number; end: number } {
  const start = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const end = Math.min(count, Math.ceil((scrollTop + height) / rowHeight) + overscan);
  return { start, end };
}

export interface VirtualListProps<T> {
  readonly items: readonly T[];
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

/**
 * A windowed list with fixed row heights: only the rows in view (plus overscan) are in the DOM,
 * positioned inside a spacer as tall as all rows, so 10,000 rows scroll like 30. Arrow keys,
 * Page Up/Down, Home and End move a roving focus between rows.
 */
export function VirtualList<T>({ items, rowHeight, maxHeight, getKey, renderRow, overscan = 8, label, ariaRowOffset = 1, onActivate, rowStyle }: VirtualListProps<T>) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(maxHeight);
  const [active, setActive] = useState(0);
  const focusPending = useRef(false);
  const frame = useRef<number | null>(null);

  useLayoutEffect(() => {
    const el = scrollRef.current;
    if (el === null || typeof ResizeObserver === 'undefined') return;
    const observer = new ResizeObserver(() => {
      setHeight(el.clientHeight);
    });
    observer.observe(el);
    return () => {
      observer.disconnect();
    };
  }, []);

  const onScroll = useCallback(() => {
    if (frame.current !== null) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = null;
      if (scrollRef.current !== null) setScrollTop(scrollRef.current.scrollTop);
    });
  }, []);

  useEffect(
    () => () => {
      if (frame.current !== null) cancelAnimationFrame(frame.current);
    },
    [],
  );

  const count = items.length;
  const activeIndex = Math.min(active, Math.max(0, count - 1));

  useEffect(() => {
    if (!focusPending.current) return;
    focusPending.current = false;
    const row = scrollRef.current?.querySelector<HTMLElement>(`[data-index="${activeIndex}"]`);
    row?.focus({ preventScroll: true });
  });

  const moveTo = (index: number): void => {
    const el = scrollRef.current;
    const next = Math.max(0, Math.min(count - 1, index));
    if (el !== null) {
      const top = next * rowHeight;
      if (top < el.scrollTop) el.scrollTop = top;
      else if (top + rowHeight > el.scrollTop + el.clientHeight) el.scrollTop = top + rowHeight - el.clientHeight;
      setScrollTop(el.scrollTop);
    }
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

  const { start, end } = visibleRange(count, rowHeight, scrollTop, height, overscan);
  const rows: ReactNode[] = [];
  for (let i = start; i < end; i++) {
    const item = items[i];
    if (item === undefined) continue;
    rows.push(
      <div
        key={getKey(item)}
        className="vlist__row"
        role="row"
        aria-rowindex={i + 1 + ariaRowOffset}
        data-index={i}
        data-key={getKey(item)}
        tabIndex={i === activeIndex ? 0 : -1}
        onFocus={() => {
          if (i !== activeIndex) setActive(i);
        }}
        style={{ ...rowStyle, transform: `translateY(${i * rowHeight}px)`, height: rowHeight }}
      >
        {renderRow(item, i, i === activeIndex)}
      </div>,
    );
  }
  return (
    <div
      ref={scrollRef}
      className="vlist"
      role="rowgroup"
      aria-label={label}
      onScroll={onScroll}
      onKeyDown={onKeyDown}
      style={{ maxHeight, height: Math.min(maxHeight, Math.max(rowHeight, count * rowHeight)) }}
    >
      <div className="vlist__spacer" style={{ height: count * rowHeight }}>
        {rows}
      </div>
    </div>
  );
}

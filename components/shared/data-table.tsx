import type { ReactNode } from 'react';

export interface DataTableProps {
  /** The column headings, in order. */
  readonly columns: readonly string[];
  /** What the table lists, for screen readers only; omitted means no caption. */
  readonly caption?: ReactNode;
  /** The table element's id (the target of a toggle's `aria-controls`). */
  readonly id?: string;
  /** The dense variant (nested tables, embeds). */
  readonly compact?: boolean;
  /** Without the wrapper that scrolls a wide table sideways (embeds: the frame is the page). */
  readonly bare?: boolean;
  /** The rows: `<tr>` elements. */
  readonly children: ReactNode;
}

/** A table with a header row of plain column headings and the given rows. */
export function DataTable({ columns, caption, id, compact = false, bare = false, children }: DataTableProps) {
  const table = (
    <table className={compact ? 'table table--compact' : 'table'} id={id}>
      {caption !== undefined ? <caption className="visually-hidden">{caption}</caption> : null}
      <thead>
        <tr>
          {columns.map((label) => (
            <th key={label} scope="col">
              {label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
  return bare ? table : <div className="table-wrap">{table}</div>;
}

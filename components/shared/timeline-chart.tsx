'use client';

/**
 * The waterfall of a volume's or a pod's operations (lib/dashboard/volume-timeline.ts) as plain
 * SVG: one lane per operation with its attempts as bars (green success, red failure, blue
 * running), a backoff lane with each failed attempt's window up to its retry deadline, and marks
 * for events and reconstruction. No chart library: the chart is a few hundred rectangles at most
 * on a time axis, which the browser draws as SVG with nothing to ship but this file and its model
 * (measured minified: 6.9 KB, 3.3 KB gzip, together with lib/dashboard/volume-timeline.ts). uPlot
 * 1.6.32, the smallest fast candidate, is 51 KB minified (22 KB gzip) plus its CSS, draws line
 * and bar series on a canvas rather than lanes of intervals, and a canvas cannot be exported as
 * SVG.
 *
 * The image is self-contained (explicit colours, a white background, system fonts), so "Copy
 * PNG" (rendered through a canvas onto the clipboard) and "Download SVG" give the same picture
 * for an incident document in any theme.
 */
import { useRef, useState } from 'react';
import type { Timeline } from '../../lib/dashboard/volume-timeline.ts';
import { EmptyState } from './empty-state.tsx';

const WIDTH = 900;
const LABEL_W = 170;
const LANE_H = 22;
const AXIS_H = 26;
const COLORS = { success: '#1e7a3c', failure: '#b42318', running: '#24519d', backoff: '#c77c02', grid: '#d4d9e0', text: '#1b1f24', muted: '#59636e', event: '#24519d', warning: '#b42318', reconstruction: '#6f42c1' };

function clock(at: number): string {
  return new Date(at).toISOString().slice(11, 19);
}

/** 5 to 8 evenly spaced ticks on a round step. */
function ticks(from: number, to: number): number[] {
  const span = to - from;
  const steps = [100, 250, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000];
  const step = steps.find((s) => span / s <= 8) ?? 86_400_000;
  const out: number[] = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) out.push(t);
  return out;
}

function svgText(svg: SVGSVGElement): string {
  return new XMLSerializer().serializeToString(svg);
}

async function pngBlob(svg: SVGSVGElement): Promise<Blob> {
  const url = URL.createObjectURL(new Blob([svgText(svg)], { type: 'image/svg+xml' }));
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    const scale = 2;
    const canvas = document.createElement('canvas');
    canvas.width = svg.viewBox.baseVal.width * scale;
    canvas.height = svg.viewBox.baseVal.height * scale;
    const ctx = canvas.getContext('2d');
    if (ctx === null) throw new Error('no 2D canvas');
    ctx.scale(scale, scale);
    ctx.drawImage(img, 0, 0);
    return await new Promise<Blob>((resolve, reject) => {
      canvas.toBlob((b) => {
        if (b === null) reject(new Error('the canvas gave no PNG'));
        else resolve(b);
      }, 'image/png');
    });
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** The timeline chart with its export buttons; `title` names the subject in the image and the file. */
export function TimelineChart({ timeline, title, fileName }: { timeline: Timeline; title: string; fileName: string }) {
  const ref = useRef<SVGSVGElement>(null);
  const [status, setStatus] = useState('');
  const { from, to, lanes, backoff, marks } = timeline;
  if (lanes.length === 0 && backoff.length === 0 && marks.length === 0) return <EmptyState>No operation, backoff or event recorded yet.</EmptyState>;

  const plotW = WIDTH - LABEL_W - 10;
  const x = (t: number): number => LABEL_W + ((t - from) / (to - from)) * plotW;
  const rows = [...lanes.map((l) => l.operationName), ...(backoff.length > 0 ? ['backoff (retry deadlines)'] : []), ...(marks.length > 0 ? ['events'] : [])];
  const height = 24 + AXIS_H + rows.length * LANE_H + 8;
  const rowY = (i: number): number => 24 + AXIS_H + i * LANE_H;
  const backoffRow = lanes.length;
  const marksRow = lanes.length + (backoff.length > 0 ? 1 : 0);

  const say = (text: string): void => {
    setStatus(text);
    setTimeout(() => {
      setStatus('');
    }, 2_000);
  };
  const copyPng = async (): Promise<void> => {
    const svg = ref.current;
    if (svg === null) return;
    try {
      const blob = await pngBlob(svg);
      await navigator.clipboard.write([new ClipboardItem({ 'image/png': blob })]);
      say('PNG copied');
    } catch (err) {
      say(`Copy failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  const downloadSvg = (): void => {
    const svg = ref.current;
    if (svg === null) return;
    const url = URL.createObjectURL(new Blob([svgText(svg)], { type: 'image/svg+xml' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = `${fileName}.svg`;
    a.click();
    URL.revokeObjectURL(url);
    say('SVG downloaded');
  };

  return (
    <figure className="timeline">
      <svg ref={ref} xmlns="http://www.w3.org/2000/svg" viewBox={`0 0 ${WIDTH} ${height}`} width="100%" role="img" aria-label={`Timeline of ${title}`} fontFamily="system-ui, sans-serif" fontSize="11">
        <rect x="0" y="0" width={WIDTH} height={height} fill="#ffffff" />
        <text x="6" y="15" fill={COLORS.text} fontSize="12" fontWeight="600">
          {title} — {new Date(from).toISOString().slice(0, 19).replace('T', ' ')} to {clock(to)} UTC
        </text>
        {ticks(from, to).map((t) => (
          <g key={t}>
            <line x1={x(t)} x2={x(t)} y1={24 + AXIS_H - 4} y2={height - 8} stroke={COLORS.grid} />
            <text x={x(t)} y={24 + AXIS_H - 8} fill={COLORS.muted} textAnchor="middle">
              {clock(t)}
            </text>
          </g>
        ))}
        {rows.map((name, i) => (
          <text key={name} x="6" y={rowY(i) + 15} fill={COLORS.text}>
            {name}
          </text>
        ))}
        {lanes.map((lane, i) =>
          lane.bars.map((b) => (
            <rect key={`${lane.operationName}-${b.start}-${b.outcome}`} x={x(b.start)} y={rowY(i) + 4} width={Math.max(2, x(b.end) - x(b.start))} height={LANE_H - 8} fill={COLORS[b.outcome]} rx="2">
              <title>{`${clock(b.start)}–${clock(b.end)} ${b.title}`}</title>
            </rect>
          )),
        )}
        {backoff.map((p) => (
          <g key={`${p.operationName}-${p.failedAt}`}>
            <line x1={x(p.failedAt)} x2={x(p.retryAt)} y1={rowY(backoffRow) + 11} y2={rowY(backoffRow) + 11} stroke={COLORS.backoff} strokeWidth="3" />
            <line x1={x(p.retryAt)} x2={x(p.retryAt)} y1={rowY(backoffRow) + 4} y2={rowY(backoffRow) + 18} stroke={COLORS.backoff} strokeWidth="2">
              <title>{`${p.operationName}: failure ${p.failure} at ${clock(p.failedAt)}, backoff ${p.windowMs} ms, retry after ${clock(p.retryAt)}`}</title>
            </line>
          </g>
        ))}
        {marks.map((m, i) => (
          <circle key={`${m.at}-${i}`} cx={x(m.at)} cy={rowY(marksRow) + 11} r="4" fill={m.kind === 'reconstruction' ? COLORS.reconstruction : m.warning ? COLORS.warning : COLORS.event}>
            <title>{`${clock(m.at)} ${m.label}`}</title>
          </circle>
        ))}
      </svg>
      <figcaption className="toolbar">
        <button type="button" className="button" onClick={() => void copyPng()}>
          Copy PNG
        </button>
        <button type="button" className="button" onClick={downloadSvg}>
          Download SVG
        </button>
        <span className="copy__status" role="status">
          {status}
        </span>
        <span className="muted small">
          green: succeeded, red: failed, blue: running; amber: backoff window up to the retry deadline; dots: events (red: warnings), purple: reconstruction
        </span>
      </figcaption>
    </figure>
  );
}

'use client';

import { useEffect, useId, useRef, useState, type ToggleEvent } from 'react';
import { errorCause } from '../../lib/dashboard/error-cause.ts';

export interface ErrorCauseTextProps {
  /** The error message as the agent sent it. */
  readonly message: string;
  /**
   * `block`: the cause as a preformatted block (the blocking detail); `inline`: one line (table
   * cells); `cell`: one line in a fixed-height, clipped virtual row, where the verbatim message
   * opens as a popover (the top layer, so neither the row's height nor its clipping changes).
   */
  readonly variant?: 'block' | 'inline' | 'cell';
  /** Start with the verbatim message shown (tests, print). */
  readonly defaultExpanded?: boolean;
}

/** Keeps a popover's open state in step with `open` (browsers without popovers: nothing to do). */
function usePopover(ref: React.RefObject<HTMLElement | null>, open: boolean, enabled: boolean): void {
  useEffect(() => {
    const el = ref.current;
    if (!enabled || el === null || typeof el.showPopover !== 'function') return;
    const shown = el.matches(':popover-open');
    if (open && !shown) el.showPopover();
    else if (!open && shown) el.hidePopover();
  }, [ref, open, enabled]);
}

/**
 * An error shown cause first: the text after the kubelet's last `" : "` (see
 * lib/dashboard/error-cause.ts), with a disclosure button (`aria-expanded`) for the verbatim
 * message. A message that is its own cause is shown as it is, without the button.
 */
export function ErrorCauseText({ message, variant = 'inline', defaultExpanded = false }: ErrorCauseTextProps) {
  const [expanded, setExpanded] = useState(defaultExpanded);
  const id = useId();
  const popoverRef = useRef<HTMLSpanElement | null>(null);
  const popover = variant === 'cell';
  usePopover(popoverRef, expanded, popover);
  const { cause, truncated } = errorCause(message);
  const Cause = variant === 'block' ? 'pre' : 'span';
  const Wrapper = variant === 'block' ? 'div' : 'span';
  const className = variant === 'block' ? 'error-block' : 'error-text';
  // Its own class, so `pre.error-block` still finds one element: the cause.
  const verbatimClass = variant === 'block' ? 'error-verbatim' : 'error-text';
  const toggle = (): void => {
    setExpanded((e) => !e);
  };
  // A light-dismissed popover (Escape, a click elsewhere) closes the disclosure too.
  const onToggle = (e: ToggleEvent<HTMLSpanElement>): void => {
    setExpanded(e.newState === 'open');
  };
  if (!truncated) return <Cause className={className}>{message}</Cause>;
  return (
    <Wrapper className={`error-cause error-cause--${variant}`} data-testid="error-cause">
      <Cause className={className} title={message}>
        {cause}
      </Cause>{' '}
      {/* A popover's invoker: the browser toggles it (and leaves it out of the light dismiss); `onToggle` keeps `expanded`. */}
      <button type="button" className="button button--small" aria-expanded={expanded} aria-controls={id} onClick={popover ? undefined : toggle} popoverTarget={popover ? id : undefined}>
        {expanded ? 'Hide full message' : 'Full message'}
      </button>
      {popover ? (
        <span id={id} ref={popoverRef} popover="auto" onToggle={onToggle} className="error-verbatim error-cause__popover">
          {message}
        </span>
      ) : (
        <Cause id={id} className={`${verbatimClass} error-cause__verbatim`} hidden={!expanded}>
          {message}
        </Cause>
      )}
    </Wrapper>
  );
}

'use client';

import { useId, useState } from 'react';
import { errorCause } from '../../lib/dashboard/error-cause.ts';

export interface ErrorCauseTextProps {
  /** The error message as the agent sent it. */
  readonly message: string;
  /**
   * `block`: the cause as a preformatted block (the blocking detail); `inline`: one line (table
   * cells); `cell`: one line in a fixed-height virtual row, the verbatim message opens over the
   * rows below instead of growing the row.
   */
  readonly variant?: 'block' | 'inline' | 'cell';
  /** Start with the verbatim message shown (tests, print). */
  readonly defaultExpanded?: boolean;
}

/**
 * An error shown cause first: the text after the kubelet's last `" : "` (see
 * lib/dashboard/error-cause.ts), with a disclosure button (`aria-expanded`) for the verbatim
 * message. A message that is its own cause is shown as it is, without the button.
 */
export function ErrorCauseText({ message, variant = 'inline', defaultExpanded = false }: ErrorCauseTextProps) {
  const [expanded, setExpanded] = useState(defaultExpanded);
  const id = useId();
  const { cause, truncated } = errorCause(message);
  const Cause = variant === 'block' ? 'pre' : 'span';
  const Wrapper = variant === 'block' ? 'div' : 'span';
  const className = variant === 'block' ? 'error-block' : 'error-text';
  // Its own class, so `pre.error-block` still finds one element: the cause.
  const verbatimClass = variant === 'block' ? 'error-verbatim' : 'error-text';
  const toggle = (): void => {
    setExpanded((e) => !e);
  };
  if (!truncated) return <Cause className={className}>{message}</Cause>;
  return (
    <Wrapper className={`error-cause error-cause--${variant}`} data-testid="error-cause">
      <Cause className={className} title={message}>
        {cause}
      </Cause>{' '}
      <button type="button" className="button button--small" aria-expanded={expanded} aria-controls={id} onClick={toggle}>
        {expanded ? 'Hide full message' : 'Full message'}
      </button>
      <Cause id={id} className={`${verbatimClass} error-cause__verbatim`} hidden={!expanded}>
        {message}
      </Cause>
    </Wrapper>
  );
}

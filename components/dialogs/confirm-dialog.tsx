'use client';

import type { UseMutationResult } from '@tanstack/react-query';
import { useCallback, useId, useState, type ReactNode } from 'react';
import type { ActionNote } from '../../lib/api/actions.ts';
import { useModalDialog } from '../hooks/use-modal-dialog.ts';
import { ActionNoteFields } from './action-note-fields.tsx';

/** What a confirmation dialog shows before the operator confirms. */
export interface ConfirmDialogContent<TVariables> {
  readonly title: string;
  /** Exactly what will happen, shown verbatim. */
  readonly description: string;
  readonly confirmLabel: string;
  /** What the mutation is run with on confirm. */
  readonly variables: TVariables;
}

export interface ConfirmDialogProps<TData, TVariables> {
  /** null: closed. */
  readonly content: ConfirmDialogContent<TVariables> | null;
  readonly mutation: UseMutationResult<TData, Error, TVariables>;
  readonly renderResult: (data: TData) => ReactNode;
  readonly renderError: (error: Error) => ReactNode;
  readonly onClose: () => void;
  /**
   * With it, the dialog asks for an optional incident ID and reason (for the audit log) and runs
   * the mutation with `withNote(variables, note)`; empty fields are left out.
   */
  readonly withNote?: (variables: TVariables, note: ActionNote) => TVariables;
}

/** The note with empty fields left out (trimmed: a blank reason is no reason). */
export function filledNote(note: ActionNote): ActionNote {
  const incidentId = note.incidentId?.trim() ?? '';
  const reason = note.reason?.trim() ?? '';
  return { ...(incidentId === '' ? {} : { incidentId }), ...(reason === '' ? {} : { reason }) };
}

/**
 * The shell of every confirmation dialog of the dashboard: a modal `<dialog>` saying exactly
 * what will happen; Confirm runs the mutation once (not again while it runs), then the dialog
 * shows the agent's answer — its result or its refusal — and offers only Close. Opening it
 * again forgets the previous answer.
 */
export function ConfirmDialog<TData, TVariables>({ content, mutation, renderResult, renderError, onClose, withNote }: ConfirmDialogProps<TData, TVariables>) {
  const titleId = useId();
  const [note, setNote] = useState<ActionNote>({});
  const { reset } = mutation;
  const onOpen = useCallback(() => {
    reset();
    setNote({});
  }, [reset]);
  const ref = useModalDialog(content !== null, onOpen);
  const done = mutation.isSuccess || mutation.isError;
  return (
    <dialog ref={ref} className="dialog" aria-labelledby={titleId} onClose={onClose}>
      {content !== null ? (
        <form
          method="dialog"
          onSubmit={(e) => {
            if (!done) {
              e.preventDefault();
              if (!mutation.isPending) mutation.mutate(withNote === undefined ? content.variables : withNote(content.variables, filledNote(note)));
            }
          }}
        >
          <h2 id={titleId}>{content.title}</h2>
          <p className="dialog__description">{content.description}</p>
          {withNote === undefined ? null : <ActionNoteFields note={note} onChange={setNote} disabled={mutation.isPending || done} />}
          {mutation.isPending ? (
            <p role="status">
              <span aria-hidden="true">↻ </span>Waiting for the agent…
            </p>
          ) : null}
          {mutation.isSuccess ? renderResult(mutation.data) : null}
          {mutation.isError ? renderError(mutation.error) : null}
          <div className="dialog__buttons">
            {done ? (
              <button type="submit" className="button" autoFocus>
                Close
              </button>
            ) : (
              <>
                <button type="button" className="button" onClick={() => ref.current?.close()}>
                  Cancel
                </button>
                <button type="submit" className="button button--primary" disabled={mutation.isPending}>
                  {content.confirmLabel}
                </button>
              </>
            )}
          </div>
        </form>
      ) : null}
    </dialog>
  );
}

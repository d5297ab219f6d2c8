'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useId, useState } from 'react';
import { fetchPodSearch, type PodSearchAnswer } from '../../lib/dashboard/pod-search.ts';
import { podHref } from '../../lib/dashboard/routes.ts';

/** The answer of a search: links to each pod's page on its node, and the nodes that could not be searched. */
export function PodSearchResults({ answer }: { answer: PodSearchAnswer }) {
  return (
    <div role="status">
      <p className="muted small">
        {answer.matches.length === 0 ? `No pod matches “${answer.query}”.` : `${answer.matches.length}${answer.truncated ? '+' : ''} pod${answer.matches.length === 1 ? '' : 's'} match “${answer.query}”${answer.truncated ? ' (the first shown)' : ''}.`}
      </p>
      {answer.matches.length > 0 ? (
        <ul>
          {answer.matches.map((m) => (
            <li key={`${m.node}|${m.uid}`}>
              <Link href={podHref(m.node, m.uid)}>{m.name}</Link> on {m.node}
              <span className="pod-ref__uid"> uid {m.uid}</span>
              {m.desired ? null : <span className="muted small"> · gone (named by its events)</span>}
            </li>
          ))}
        </ul>
      ) : null}
      {answer.failed.length > 0 ? (
        <ul className="error-text small">
          {answer.failed.map((f) => (
            <li key={f.node}>
              {f.node} could not be searched: {f.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/**
 * Find a pod by (part of) its `namespace/name` or UID on every node: one request on submit
 * (the dashboard server asks each agent), never while typing.
 */
export function PodSearch() {
  const inputId = useId();
  const [query, setQuery] = useState('');
  const search = useQuery({
    queryKey: ['pod-search', query],
    queryFn: ({ signal }) => fetchPodSearch(query, (input, init) => fetch(input, init), signal),
    enabled: query !== '',
    retry: false,
    staleTime: 5_000,
  });
  return (
    <section className="pod-search" aria-labelledby={`${inputId}-title`}>
      <h2 id={`${inputId}-title`} className="visually-hidden">
        Find a pod
      </h2>
      <form
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          const text = new FormData(e.currentTarget).get('q');
          setQuery(typeof text === 'string' ? text.trim() : '');
        }}
      >
        <label htmlFor={inputId}>Find a pod on any node</label>
        <input id={inputId} name="q" type="search" placeholder="namespace/name or UID" />
        <button type="submit" className="button">
          Search
        </button>
      </form>
      {search.isFetching ? <p className="muted small" role="status">Searching every node…</p> : null}
      {search.isError ? <p className="error-text" role="alert">{search.error.message}</p> : null}
      {search.data !== undefined && !search.isFetching ? <PodSearchResults answer={search.data} /> : null}
    </section>
  );
}

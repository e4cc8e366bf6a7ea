import { useEffect, useRef, useState } from 'preact/hooks';
import { jobURL, JobView, operate } from './api';

// The job's operations: suspend, resume, scale an elastic job's workers and
// delete (after a confirmation). The server does each with the user's own
// credentials, so what the cluster refuses is shown as it said it.

type Outcome = { ok: boolean; text: string } | null;

export function Actions({ namespace, name, view }: { namespace: string; name: string; view: JobView }) {
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [confirming, setConfirming] = useState(false);
  const url = jobURL(namespace, name);
  const finished = view.row.phase === 'Completed' || view.row.phase === 'Failed';

  const run = async (what: string, method: 'POST' | 'DELETE', path: string, body?: unknown) => {
    setBusy(true);
    setOutcome(null);
    try {
      setOutcome({ ok: true, text: await operate(method, url + path, body) });
    } catch (e) {
      setOutcome({ ok: false, text: `${what}: ${(e as Error).message}` });
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="card actions" aria-label="Operations">
      <div class="controls">
        {!finished && !view.spec.suspend && (
          <button type="button" data-action="suspend" disabled={busy} onClick={() => run('Suspend', 'POST', '/suspend')}
            aria-label={`Suspend ${name}: delete its pods, keep the job`}>
            Suspend
          </button>
        )}
        {!finished && view.spec.suspend && (
          <button type="button" data-action="resume" disabled={busy} onClick={() => run('Resume', 'POST', '/resume')}
            aria-label={`Resume ${name}: create its pods again`}>
            Resume
          </button>
        )}
        {!finished && view.elastic && (
          <Scale elastic={view.elastic} busy={busy} onScale={(n) => run('Scale', 'POST', '/scale', { replicas: n })} />
        )}
        <button type="button" class="danger" data-action="delete" disabled={busy} onClick={() => setConfirming(true)}
          aria-label={`Delete ${name}…`}>
          Delete…
        </button>
      </div>
      {outcome && (
        <p class={outcome.ok ? 'done' : 'problem'} role={outcome.ok ? 'status' : 'alert'} data-testid="outcome" data-ok={String(outcome.ok)}>
          {outcome.text}
        </p>
      )}
      {confirming && (
        <ConfirmDelete
          namespace={namespace}
          name={name}
          onClose={() => setConfirming(false)}
          onDelete={() => {
            setConfirming(false);
            run('Delete', 'DELETE', '');
          }}
        />
      )}
    </section>
  );
}

function Scale({ elastic, busy, onScale }: { elastic: NonNullable<JobView['elastic']>; busy: boolean; onScale: (n: number) => void }) {
  const [n, setN] = useState(elastic.replicas);
  // The field follows the spec when someone else scales the job.
  useEffect(() => setN(elastic.replicas), [elastic.replicas]);
  const valid = Number.isInteger(n) && n >= elastic.min && n <= elastic.max;
  return (
    <span class="scale">
      <label>
        Workers{' '}
        <input type="number" data-testid="scale-workers" min={elastic.min} max={elastic.max} step={1} value={n}
          aria-describedby="scale-range" onInput={(e) => setN(Number((e.target as HTMLInputElement).value))} />
      </label>{' '}
      <span id="scale-range" class="muted small">({elastic.min} to {elastic.max})</span>{' '}
      <button type="button" data-action="scale" disabled={busy || !valid || n === elastic.replicas} onClick={() => onScale(n)}>
        Scale
      </button>
    </span>
  );
}

// ConfirmDelete is a modal dialog: focus starts on Delete, so Enter
// deletes, and Escape (or Cancel) leaves the job alone.
function ConfirmDelete({ namespace, name, onClose, onDelete }: { namespace: string; name: string; onClose: () => void; onDelete: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const confirm = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const d = ref.current!;
    d.showModal();
    confirm.current?.focus();
    return () => d.close();
  }, []);
  return (
    <dialog ref={ref} class="confirm" aria-labelledby="confirm-title" aria-describedby="confirm-text" onCancel={onClose} data-testid="confirm-delete">
      <h2 id="confirm-title">Delete PaddleJob {name}?</h2>
      <p id="confirm-text">
        PaddleJob <span class="mono">{namespace}/{name}</span> is deleted, with its pods, Service and ConfigMaps, and its metric
        history. This cannot be undone.
      </p>
      <div class="controls">
        <button type="button" ref={confirm} class="danger" data-action="confirm-delete" onClick={onDelete}>
          Delete
        </button>
        <button type="button" data-action="cancel-delete" onClick={onClose}>
          Cancel
        </button>
      </div>
    </dialog>
  );
}

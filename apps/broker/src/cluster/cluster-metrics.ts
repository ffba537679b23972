import { Counter, type Registry } from 'prom-client';

/**
 * The metrics that exist only because queues are spread over brokers, in the engine's registry
 * beside its own: how often this broker took a queue or stopped serving one, and how often the
 * database's fence refused its transaction because another broker had taken the queue's lease
 * meanwhile (each time, its store of that queue stops writing for good and the queue is given up);
 * and how many messages it forwarded for its clients, to owners and from them.
 */
export class ClusterMetrics {
  readonly #handovers: Counter<'direction'>;
  readonly #fenced: Counter;
  readonly #forwarded: Counter<'request'>;

  constructor(registry: Registry) {
    this.#handovers = new Counter({
      name: 'ricochet_cluster_queue_handovers_total',
      help: 'Queues this broker took the lease of (direction=taken) or stopped serving (direction=given_up: handed over to the broker assigned it, or lost: the lease ran out or was taken over)',
      labelNames: ['direction'],
      registers: [registry],
    });
    this.#fenced = new Counter({
      name: 'ricochet_cluster_fenced_writes_total',
      help: "Transactions of this broker the database's fence refused: another broker had taken the queue's lease (a new epoch)",
      registers: [registry],
    });
    this.#forwarded = new Counter({
      name: 'ricochet_cluster_forwarded_messages_total',
      help: "Messages this broker forwarded for its clients to the queues' owners (request=send) or from them (request=deliver): what clients that route to owners save (docs/guides/scale-out.md)",
      labelNames: ['request'],
      registers: [registry],
    });
    // Present from the start, at 0, so a dashboard's rate() has a series before the first handover.
    this.#handovers.inc({ direction: 'taken' }, 0);
    this.#handovers.inc({ direction: 'given_up' }, 0);
    this.#forwarded.inc({ request: 'send' }, 0);
    this.#forwarded.inc({ request: 'deliver' }, 0);
  }

  forwarded(request: 'send' | 'deliver', messages: number): void {
    this.#forwarded.inc({ request }, messages);
  }

  handover(direction: 'taken' | 'givenUp'): void {
    this.#handovers.inc({ direction: direction === 'taken' ? 'taken' : 'given_up' });
  }

  fenced(): void {
    this.#fenced.inc();
  }
}

import { ConflictError, NotFoundError } from '../../errors';

export class WalletNotFoundError extends NotFoundError {
  constructor() {
    super('No wallet of yours has this id.', 'WalletNotFound');
  }
}

export class TopUpNotFoundError extends NotFoundError {
  constructor(message = 'No top-up of this wallet has this id.') {
    super(message, 'TopUpNotFound');
  }
}

/** 409: a signed callback whose webhook-id was already received. */
export class CallbackReplayedError extends ConflictError {
  constructor() {
    super('CallbackReplayed', 'A callback with this webhook-id was already received: it is not processed again.');
  }
}

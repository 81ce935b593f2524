import { escapeHtml, formatMoney, type Payment, type PaymentLink } from '../modules/payment-links';

/**
 * The payment page's HTML: server-rendered, plain HTML and CSS (no script at all, no CDN),
 * mobile first. Every dynamic value goes through escapeHtml.
 */

const h = escapeHtml;

export const PAY_CSS = `
*,*::before,*::after{box-sizing:border-box}
html{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;font-size:16px;line-height:1.45;color:#1b1f24;background:#f3f5f8}
body{margin:0;padding:16px}
main{max-width:480px;margin:0 auto;background:#fff;border-radius:12px;padding:20px;box-shadow:0 1px 3px rgba(0,0,0,.12)}
h1{font-size:1.35rem;margin:0 0 4px}
h2{font-size:1.05rem;margin:20px 0 8px}
.merchant{color:#4a5360;margin:0 0 16px}
.amount{font-size:2rem;font-weight:700;margin:8px 0}
.reference,.muted{color:#4a5360;font-size:.95rem}
dl{display:grid;grid-template-columns:auto 1fr;gap:4px 12px;margin:12px 0}
dt{color:#4a5360}dd{margin:0;word-break:break-all}
form{margin:0}
fieldset{border:1px solid #d5dae1;border-radius:10px;padding:12px 14px;margin:12px 0}
legend{font-weight:600;padding:0 4px}
label{display:block;font-weight:600;margin:10px 0 4px}
input[type=text],input[type=tel]{width:100%;font-size:1.05rem;padding:10px 12px;border:1px solid #aab3bf;border-radius:8px}
input:focus{outline:3px solid #8ab4f8;outline-offset:1px}
button{display:block;width:100%;margin-top:14px;padding:12px;font-size:1.05rem;font-weight:600;color:#fff;background:#0b5cd5;border:0;border-radius:8px;cursor:pointer}
button:focus{outline:3px solid #8ab4f8;outline-offset:2px}
.hint{font-size:.85rem;color:#4a5360;margin:4px 0 0}
.error{background:#fdecea;border:1px solid #f5c2bd;color:#8a1c12;border-radius:8px;padding:10px 12px;margin:12px 0}
.ok{background:#e7f6ec;border:1px solid #b5e0c2;color:#1d6b34;border-radius:8px;padding:10px 12px;margin:12px 0}
.pending{background:#fff7e0;border:1px solid #f0d68a;color:#6b5200;border-radius:8px;padding:10px 12px;margin:12px 0}
.notice{font-size:.85rem;color:#4a5360;border-top:1px solid #e3e7ec;margin-top:20px;padding-top:12px}
.sandbox{display:inline-block;font-size:.75rem;font-weight:700;letter-spacing:.04em;color:#6b5200;background:#fff2c2;border-radius:4px;padding:2px 6px;margin-bottom:8px}
a{color:#0b5cd5}
`;

const NOT_A_CONFIRMATION =
  'Returning to the merchant’s site is not a confirmation of payment: the merchant checks the payment status with the payment service before delivering your order.';

export function layout(title: string, body: string, options: { refreshSeconds?: number } = {}): string {
  const refresh = options.refreshSeconds ? `<meta http-equiv="refresh" content="${options.refreshSeconds}">` : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
${refresh}<title>${h(title)}</title>
<link rel="stylesheet" href="/pay/assets/pay.css">
</head>
<body>
<main>
<span class="sandbox">SANDBOX</span>
${body}
</main>
</body>
</html>
`;
}

export function messagePage(title: string, message: string, extra = ''): string {
  return layout(title, `<h1>${h(title)}</h1>\n<p>${h(message)}</p>\n${extra}`);
}

export interface PaymentFormView {
  link: PaymentLink;
  /** The amount to pay when known (fixed, from the URL); null: the customer types it. */
  amountMinor: bigint | null;
  reference: string | null;
  token: string;
  action: string;
  /** What the customer typed, shown back after an error. */
  values?: { amount?: string; phone?: string };
  error?: { message: string; fields: Array<{ field: string; message: string }> };
  method?: 'mobile_money' | 'card';
}

function amountInput(view: PaymentFormView, id: string): string {
  if (view.amountMinor !== null) return '';
  const { link } = view;
  const bounds: string[] = [];
  if (link.minimumAmountMinor !== null) bounds.push(`at least ${formatMoney(link.minimumAmountMinor, link.exponent, link.currency)}`);
  if (link.maximumAmountMinor !== null) bounds.push(`at most ${formatMoney(link.maximumAmountMinor, link.exponent, link.currency)}`);
  const decimals = link.exponent === 0 ? 'whole number' : `up to ${link.exponent} decimals`;
  return `<label for="${id}">Amount (${h(link.currency)})</label>
<input type="text" id="${id}" name="amount" inputmode="decimal" autocomplete="off" required maxlength="24" value="${h(view.values?.amount ?? '')}">
<p class="hint">${h([decimals, ...bounds].join(', '))}.</p>`;
}

export function paymentFormPage(view: PaymentFormView): string {
  const { link } = view;
  const amount =
    view.amountMinor !== null
      ? `<p class="amount" id="amount">${h(formatMoney(view.amountMinor, link.exponent, link.currency))}</p>`
      : `<p class="muted">Enter the amount to pay in ${h(link.currency)}.</p>`;
  const reference = view.reference !== null ? `<p class="reference">Reference: <strong id="reference">${h(view.reference)}</strong></p>` : '';
  const description = link.description ? `<p>${h(link.description)}</p>` : '';
  const error = view.error
    ? `<div class="error" role="alert"><p>${h(view.error.message)}</p>${
        view.error.fields.length ? `<ul>${view.error.fields.map((f) => `<li>${h(f.message)}</li>`).join('')}</ul>` : ''
      }</div>`
    : '';
  const token = `<input type="hidden" name="token" value="${h(view.token)}">`;
  return layout(
    `Pay ${link.organizationName}`,
    `<h1>Pay ${h(link.organizationName)}</h1>
<p class="merchant">Secure payment to ${h(link.organizationName)}</p>
${description}${amount}${reference}${error}
<form method="post" action="${h(view.action)}" id="mobile-money-form">
${token}<input type="hidden" name="method" value="mobile_money">
<fieldset>
<legend>Mobile money</legend>
${amountInput(view, 'amount-mm')}
<label for="phone">Mobile money number</label>
<input type="tel" id="phone" name="phone" autocomplete="tel" inputmode="tel" required maxlength="24" placeholder="+225 07 12 34 56 78" value="${h(view.values?.phone ?? '')}">
<p class="hint">You will be asked to approve the payment on your phone.</p>
<button type="submit" id="pay-mobile-money">Pay with mobile money</button>
</fieldset>
</form>
<form method="post" action="${h(view.action)}" id="card-form">
${token}<input type="hidden" name="method" value="card">
<fieldset>
<legend>Test card</legend>
${amountInput(view, 'amount-card')}
<label for="card-number">Card number</label>
<input type="text" id="card-number" name="card_number" inputmode="numeric" autocomplete="off" required maxlength="23" placeholder="4242 4242 4242 4242">
<label for="card-expiry">Expiry (MM/YY)</label>
<input type="text" id="card-expiry" name="card_expiry" inputmode="numeric" autocomplete="off" required maxlength="7" placeholder="12/30">
<label for="card-cvc">Security code</label>
<input type="text" id="card-cvc" name="card_cvc" inputmode="numeric" autocomplete="off" required maxlength="4" placeholder="123">
<button type="submit" id="pay-card">Pay with card</button>
</fieldset>
</form>
<p class="notice">${h(NOT_A_CONFIRMATION)}</p>`,
  );
}

const FAILURES: Record<string, string> = {
  insufficient_funds: 'The balance of the account was not enough.',
  approval_rejected: 'The payment was declined on the phone.',
  payer_not_found: 'No mobile money account has this number.',
  expired: 'The payment was not approved in time.',
  card_declined: 'The card was declined.',
  destination_unavailable: 'The merchant cannot receive payments at the moment.',
};

export function resultPage(link: PaymentLink, payment: Payment, retryUrl: string | null): string {
  const amount = formatMoney(payment.amountMinor, payment.exponent, payment.currency);
  const details = `<dl>
<dt>Merchant</dt><dd>${h(link.organizationName)}</dd>
<dt>Amount</dt><dd id="paid-amount">${h(amount)}</dd>
${payment.reference !== null ? `<dt>Reference</dt><dd id="paid-reference">${h(payment.reference)}</dd>` : payment.customerReference !== null ? `<dt>Your reference</dt><dd id="paid-reference">${h(payment.customerReference)}</dd>` : ''}
<dt>Payment</dt><dd id="payment-id">${h(payment.id)}</dd>
</dl>`;
  const notice = `<p class="notice">${h(NOT_A_CONFIRMATION)}</p>`;
  if (payment.status === 'succeeded') {
    return layout(
      'Payment confirmed',
      `<h1>Payment confirmed</h1>\n<div class="ok" role="status" id="status" data-status="succeeded">Your payment of ${h(amount)} to ${h(link.organizationName)} succeeded.</div>\n${details}\n${notice}`,
    );
  }
  if (payment.status === 'failed') {
    const reason = FAILURES[payment.failureReason ?? ''] ?? 'The payment failed.';
    const retry = retryUrl ? `<p><a href="${h(retryUrl)}">Try again</a></p>` : '';
    return layout(
      'Payment failed',
      `<h1>Payment failed</h1>\n<div class="error" role="alert" id="status" data-status="failed">${h(reason)} No money was taken.</div>\n${details}\n${retry}\n${notice}`,
    );
  }
  return layout(
    'Payment pending',
    `<h1>Waiting for confirmation</h1>\n<div class="pending" role="status" id="status" data-status="pending">Approve the payment on your phone. This page refreshes by itself.</div>\n${details}\n${notice}`,
    { refreshSeconds: 2 },
  );
}

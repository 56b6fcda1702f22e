"""Errors of payments, by audience.

- The user's: `PaymentsDisabled` (the server takes no payments), `AlreadySubscribed` (a second Pro
  subscription), `NoBillingAccount` (the portal before any purchase).
- The sender's: `InvalidSignature` (a webhook not signed by Stripe with our secret, or too old).
- The provider's: `PaymentProviderError` (Stripe failed or refused a request; the message is ours,
  never Stripe's text).
"""

from __future__ import annotations


class PaymentsError(Exception):
    """Base of every payments error."""


class PaymentsDisabled(PaymentsError):
    """Payments are off (STRIPE_SECRET_KEY is not set)."""


class AlreadySubscribed(PaymentsError):
    """The user already has Pro."""


class NoBillingAccount(PaymentsError):
    """The user has never paid through Stripe, so there is no customer portal to open."""


class InvalidSignature(PaymentsError):
    """A webhook request whose Stripe-Signature is missing, malformed, wrong or too old."""


class PaymentProviderError(PaymentsError):
    """Stripe could not be reached, or refused the request."""

/** Billing, usage and admin: wire types and calls (backend/almanac/api/routes/{billing,usage,admin}.py). */

import { request } from "./client";
import type { Credits } from "./types";

export interface Product {
  id: "pro" | "pack";
  name: string;
  price_usd: number;
  interval: "month" | null;
  credits: number;
  description: string;
}

export interface Subscription {
  status: string;
  cancel_at_period_end: boolean;
  current_period_end: string | null;
  payment_failed: boolean;
}

export interface Billing {
  payments_enabled: boolean;
  plan: string;
  subscription: Subscription | null;
  portal_available: boolean;
  products: Product[];
}

export interface UsageDay {
  day: string;
  credits: number;
  daily: number;
  pack: number;
}

export interface UsageItem {
  kind: "tool" | "question" | "discussion" | "gateway";
  name: string | null;
  calls: number;
  credits: number;
}

export interface UsageModel {
  source: "chat" | "gateway";
  role: string;
  provider: string;
  model: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  /** Of `calls`, those whose server reported no usage (their tokens were estimated). */
  estimated_calls: number;
  estimated: boolean;
}

export interface UsageQuery {
  user_id: string;
  email: string;
  conversation_id: string;
  query_id: string;
  day: string;
  credits: number;
  title: string | null;
  question: string | null;
  /** chat: a conversation's question; discussion: a discussion's turn (`query_id` q3 = turn 3). */
  kind?: "chat" | "discussion";
}

export interface Usage {
  from: string;
  to: string;
  credits: number;
  days: UsageDay[];
  items: UsageItem[];
  models: UsageModel[];
  top_queries: UsageQuery[];
  top_users: { user_id: string; email: string; credits: number }[];
}

export interface AdminUser {
  id: string;
  email: string;
  plan: string;
  role: "user" | "admin";
  disabled: boolean;
  disabled_at: string | null;
  created_at: string;
}

export interface AdminUserRow extends AdminUser {
  pack: number;
  daily: number;
  period: string;
}

export interface LedgerEntry {
  id: number;
  delta: number;
  bucket: string;
  kind: string;
  reason: string;
  period: string;
  created_at: string;
}

export interface AdminUserDetail {
  user: AdminUser;
  credits: Credits & { recent: LedgerEntry[] };
  subscription: Subscription | null;
}

export interface AuditEntry {
  id: number;
  actor_id: string;
  actor_email: string;
  action: string;
  target_user_id: string | null;
  target_email: string | null;
  details: Record<string, unknown>;
  created_at: string;
}

const enc = encodeURIComponent;
const range = (from?: string, to?: string) =>
  new URLSearchParams([...(from ? [["from", from]] : []), ...(to ? [["to", to]] : [])]).toString();

export const operations = {
  billing: () => request<Billing>("GET", "/api/billing"),
  checkout: (product: "pro" | "pack") => request<{ url: string }>("POST", "/api/billing/checkout", { product }),
  portal: () => request<{ url: string }>("POST", "/api/billing/portal"),
  usage: (from?: string, to?: string) => request<Usage>("GET", `/api/usage?${range(from, to)}`),

  adminUsers: (search: string, offset = 0) =>
    request<{ data: AdminUserRow[]; count: number }>(
      "GET",
      `/api/admin/users?search=${enc(search)}&limit=50&offset=${offset}`,
    ),
  adminUser: (id: string) => request<AdminUserDetail>("GET", `/api/admin/users/${enc(id)}?recent=50`),
  adjustCredits: (id: string, body: { action: "grant" | "remove"; bucket: "pack" | "daily"; amount: number; reason: string }) =>
    request<{ balance: number }>("POST", `/api/admin/users/${enc(id)}/credits`, body),
  setPlan: (id: string, plan: "free" | "pro", reason: string) =>
    request<{ previous_plan: string; plan: string; top_up: number }>("PUT", `/api/admin/users/${enc(id)}/plan`, { plan, reason }),
  setDisabled: (id: string, disabled: boolean, reason: string) =>
    request<AdminUser>("PUT", `/api/admin/users/${enc(id)}/status`, { disabled, reason }),
  setRole: (id: string, role: "user" | "admin") => request<AdminUser>("PUT", `/api/admin/users/${enc(id)}/role`, { role }),
  audit: (userId?: string) =>
    request<{ data: AuditEntry[]; count: number }>("GET", `/api/admin/audit?limit=50${userId ? `&user_id=${enc(userId)}` : ""}`),
  serviceUsage: (from?: string, to?: string) => request<Usage>("GET", `/api/admin/usage?${range(from, to)}`),
};

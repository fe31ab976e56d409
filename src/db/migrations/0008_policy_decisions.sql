CREATE TABLE "policy_decision_counts" (
	"organization_id" uuid NOT NULL,
	"policy_id" uuid NOT NULL,
	"agent_id" uuid NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"allow_count" integer DEFAULT 0 NOT NULL,
	"deny_count" integer DEFAULT 0 NOT NULL,
	"require_approval_count" integer DEFAULT 0 NOT NULL,
	"warn_count" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "policy_decision_counts_organization_id_policy_id_agent_id_hour_pk" PRIMARY KEY("organization_id","policy_id","agent_id","hour")
);
--> statement-breakpoint
CREATE TABLE "policy_decisions" (
	"organization_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"agent_id" uuid NOT NULL,
	"action_type" text NOT NULL,
	"action_name" text NOT NULL,
	"action_resource" text,
	"environment" text NOT NULL,
	"decision" text NOT NULL,
	"violations" jsonb NOT NULL,
	"warnings" jsonb NOT NULL,
	"policy_ids" uuid[] NOT NULL,
	"evaluated_policies" integer NOT NULL,
	"evaluation_ms" double precision NOT NULL,
	"access_grant_id" uuid,
	"session_id" text,
	"trace_id" text,
	"user_id" text,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "policy_decisions_organization_id_id_pk" PRIMARY KEY("organization_id","id")
);
--> statement-breakpoint
CREATE INDEX "policy_decision_counts_org_hour_idx" ON "policy_decision_counts" USING btree ("organization_id","hour");--> statement-breakpoint
CREATE INDEX "policy_decision_counts_org_agent_hour_idx" ON "policy_decision_counts" USING btree ("organization_id","agent_id","hour");--> statement-breakpoint
CREATE INDEX "policy_decision_counts_hour_idx" ON "policy_decision_counts" USING btree ("hour");--> statement-breakpoint
CREATE INDEX "policy_decisions_org_created_idx" ON "policy_decisions" USING btree ("organization_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "policy_decisions_org_agent_created_idx" ON "policy_decisions" USING btree ("organization_id","agent_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "policy_decisions_policy_ids_gin" ON "policy_decisions" USING gin ("policy_ids");
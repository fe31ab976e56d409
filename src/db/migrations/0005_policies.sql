CREATE TABLE "policies" (
	"organization_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"policy_type" text NOT NULL,
	"applies_to_agents" uuid[] DEFAULT '{}' NOT NULL,
	"applies_to_environments" text[] DEFAULT '{}' NOT NULL,
	"rule_definition" jsonb NOT NULL,
	"enforcement_mode" text NOT NULL,
	"is_active" boolean DEFAULT true NOT NULL,
	"alert_on_violation" boolean DEFAULT true NOT NULL,
	"alert_channels" text[] DEFAULT '{}' NOT NULL,
	"compliance_frameworks" text[] DEFAULT '{}' NOT NULL,
	"compliance_controls" text[] DEFAULT '{}' NOT NULL,
	"severity" text DEFAULT 'warning' NOT NULL,
	"actions" text[] DEFAULT '{"log"}' NOT NULL,
	"agent_id" uuid,
	"priority" integer DEFAULT 100 NOT NULL,
	"max_requests" integer,
	"time_window_seconds" integer,
	"notify_webhook_url" text,
	"notify_email" text[] DEFAULT '{}' NOT NULL,
	"notes" text,
	"tags" text[] DEFAULT '{}' NOT NULL,
	"created_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "policies_organization_id_id_pk" PRIMARY KEY("organization_id","id")
);
--> statement-breakpoint
ALTER TABLE "policies" ADD CONSTRAINT "policies_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "policies" ADD CONSTRAINT "policies_agent_fk" FOREIGN KEY ("organization_id","agent_id") REFERENCES "public"."agents"("organization_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "policies_org_priority_idx" ON "policies" USING btree ("organization_id","priority","id");--> statement-breakpoint
CREATE INDEX "policies_org_active_priority_idx" ON "policies" USING btree ("organization_id","priority","id") WHERE "policies"."is_active";--> statement-breakpoint
CREATE INDEX "policies_org_type_idx" ON "policies" USING btree ("organization_id","policy_type");--> statement-breakpoint
CREATE INDEX "policies_org_agent_idx" ON "policies" USING btree ("organization_id","agent_id") WHERE "policies"."agent_id" is not null;--> statement-breakpoint
CREATE INDEX "policies_applies_to_agents_gin" ON "policies" USING gin ("applies_to_agents");
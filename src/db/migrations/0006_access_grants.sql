CREATE TABLE "access_grants" (
	"organization_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"agent_id" uuid NOT NULL,
	"action" text NOT NULL,
	"resource" text,
	"parameters_digest" text,
	"policy_id" uuid,
	"policy_version" timestamp with time zone,
	"status" text NOT NULL,
	"reason" text,
	"requested_by" text NOT NULL,
	"requested_at" timestamp with time zone NOT NULL,
	"decided_by" text,
	"decided_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "access_grants_organization_id_id_pk" PRIMARY KEY("organization_id","id")
);
--> statement-breakpoint
ALTER TABLE "access_grants" ADD CONSTRAINT "access_grants_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "access_grants" ADD CONSTRAINT "access_grants_agent_fk" FOREIGN KEY ("organization_id","agent_id") REFERENCES "public"."agents"("organization_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "access_grants_live_idx" ON "access_grants" USING btree ("organization_id","agent_id","expires_at") WHERE "access_grants"."status" = 'approved';--> statement-breakpoint
CREATE INDEX "access_grants_agent_idx" ON "access_grants" USING btree ("organization_id","agent_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "access_grants_pending_uq" ON "access_grants" USING btree ("organization_id","agent_id","action",coalesce("resource", ''),coalesce("parameters_digest", '')) WHERE "access_grants"."status" = 'pending';
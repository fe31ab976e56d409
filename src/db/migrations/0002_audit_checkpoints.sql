CREATE TABLE "audit_checkpoints" (
	"organization_id" uuid NOT NULL,
	"id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"seq" bigint NOT NULL,
	"checksum" text NOT NULL,
	"signed_at" timestamp with time zone NOT NULL,
	"key_id" text NOT NULL,
	"public_key" text NOT NULL,
	"message" text NOT NULL,
	"signature" text NOT NULL,
	CONSTRAINT "audit_checkpoints_organization_id_id_pk" PRIMARY KEY("organization_id","id")
);
--> statement-breakpoint
ALTER TABLE "audit_checkpoints" ADD CONSTRAINT "audit_checkpoints_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "audit_checkpoints_org_key_seq_uq" ON "audit_checkpoints" USING btree ("organization_id","key_id","seq");--> statement-breakpoint
CREATE INDEX "audit_checkpoints_org_seq_idx" ON "audit_checkpoints" USING btree ("organization_id","seq");